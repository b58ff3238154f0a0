package metriccache

import (
	"testing"
	"time"
)

// BenchmarkAppendCycle appends the pod and container samples of one collection round of a 200-pod node in one
// Append call: 1,600 samples (4 per pod, 2 per container of two). The node-level series of a round (node, system,
// host applications, best-effort) are not included; the collectors append those in calls of their own.
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
