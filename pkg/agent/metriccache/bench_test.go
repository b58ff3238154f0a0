package metriccache

import (
	"testing"
	"time"
)

// BenchmarkAppendCycle appends one collection cycle of a 200-pod node (8 series per pod plus the node's), as the
// collectors do every second.
//
//	go test -run '^$' -bench . -benchmem ./pkg/agent/metriccache/
func BenchmarkAppendCycle(b *testing.B) {
	c := newCache(b, DefaultConfig())
	var samples []Sample
	for i := range 200 {
		uid := podUID(i)
		for _, m := range []Metric{PodCPUUsage, PodMemoryUsage, PodPageCache, PodCPUThrottledRatio} {
			samples = append(samples, Sample{Key: PodKey(m, uid), Value: 1})
		}
		for _, ctr := range []string{"app", "sidecar"} {
			samples = append(samples, Sample{Key: ContainerKey(ContainerCPUUsage, uid, ctr), Value: 1}, Sample{Key: ContainerKey(ContainerMemoryUsage, uid, ctr), Value: 1})
		}
	}
	t := t0
	for b.Loop() {
		t = t.Add(time.Second)
		c.Append(t, samples...)
	}
}

// BenchmarkQueryPercentiles queries the p99 of a full 5-minute pod window, the reporter's most expensive query.
func BenchmarkQueryPercentiles(b *testing.B) {
	c := newCache(b, DefaultConfig())
	k := PodKey(PodCPUUsage, podUID(1))
	for i := range 300 {
		c.Append(t0.Add(time.Duration(i)*time.Second), Sample{Key: k, Value: float64(i % 17)})
	}
	end := t0.Add(299 * time.Second)
	for b.Loop() {
		r, _ := c.Query(k, end.Add(-300*time.Second), end)
		_ = r.Value(P99)
	}
}
