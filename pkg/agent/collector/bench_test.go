package collector

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// benchPods returns n pods with two running containers each, a third of them in each Kubernetes QoS class.
func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		name := fmt.Sprintf("pod-%03d", i)
		b := tu.Pod(name).UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)).Priority(9000).Label(slov1alpha1.LabelQoSClass, "LS")
		switch i % 3 {
		case 0: // Guaranteed
			b.Container("app").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://app" + name)
			b.Container("sidecar").Requests("cpu", "100m", "memory", "64Mi").Limits("cpu", "100m", "memory", "64Mi").Running("containerd://side" + name)
		case 1: // Burstable
			b.Container("app").Requests("cpu", "500m").Running("containerd://app" + name)
			b.Container("sidecar").Requests("cpu", "100m").Running("containerd://side" + name)
		default: // BestEffort, batch
			b = tu.Pod(name).UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)).Priority(5500).Label(slov1alpha1.LabelQoSClass, "BE")
			b.Container("app").Running("containerd://app" + name).Container("sidecar").Running("containerd://side" + name)
		}
		pods[i] = b.Obj()
	}
	return pods
}

// BenchmarkCollectionCycle measures one full collection cycle (every default collector once: "full") and the work
// of an ordinary second (the collectors whose interval is 1 s: "1s") on a simulated node with 200 pods of two
// containers each. Besides ns/op (wall time) it reports cpu-ms/cycle: the process's user+system
// CPU time spent inside the cycles (getrusage), the figure the 5 ms target is about. The simulated host's own work
// (advancing 1,200 counter files) and its garbage are kept out of the measurement.
//
//	go test -run '^$' -bench BenchmarkCollectionCycle -benchmem ./pkg/agent/collector/
func BenchmarkCollectionCycle(b *testing.B) {
	var everySecond []string
	for _, f := range Registry() {
		if f.Interval == time.Second {
			everySecond = append(everySecond, f.Name)
		}
	}
	for _, shape := range []hostsim.Config{
		{Version: cgroup.V1, Driver: cgroup.Cgroupfs},
		{Version: cgroup.V2, Driver: cgroup.Systemd},
	} {
		for _, set := range []struct {
			name      string
			selection []string
		}{{"full", []string{"*"}}, {"1s", everySecond}} {
			b.Run(fmt.Sprintf("%s-%s-200pods-%s", shape.Version, shape.Driver, set.name), func(b *testing.B) {
				benchCycle(b, shape, set.selection)
			})
		}
	}
}

func benchCycle(b *testing.B, shape hostsim.Config, selection []string) {
	shape.CPUs = 32
	shape.MemTotal = 256 << 30
	r := newRig(b, shape, selection...)
	for _, p := range benchPods(200) {
		r.addPod(b, p, hostsim.Usage{CPU: 0.1, Memory: 100 << 20, PageCache: 10 << 20, Throttled: 0.1, Pressure: 0.01})
	}
	// Warm up: rates need a previous reading.
	if err := r.cycles(b, 2); !expected(shape, err) {
		b.Fatal(err)
	}
	ctx := context.Background()
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := r.host.Advance(time.Second); err != nil {
			b.Fatal(err)
		}
		r.clock.Step(time.Second)
		runtime.GC() // collect the simulation's garbage now, not during the cycle
		before := cpuTime()
		b.StartTimer()
		if err := r.runner.CollectOnce(ctx); !expected(shape, err) {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - before
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/cycle")
}

// expected reports whether a collection round's err is what the shape allows: none, or on cgroup v1, which has no
// per-pod pressure, the PSI collector saying so. Anything else fails the benchmark on either version.
func expected(shape hostsim.Config, err error) bool {
	return err == nil || (shape.Version == cgroup.V1 && onlyUnsupported(err))
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
