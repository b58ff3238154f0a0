package perf

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/test/cgrouptest"
)

// BenchmarkSampleCgroups measures one CPI sampling round at 200 containers: a group read per CPU of each of 200
// real cgroups, as the cpi collector does every interval. The hardware events cannot be opened on a host without a
// PMU (this VM), so it counts the task clock instead: the same per-CPU cgroup groups of two events, the same
// read(2) per CPU. cpu-ms/round is the CPU time the reads took (user + system of this process), the cost the agent
// pays per round; opening the groups is done once per container and not measured. In the busy variant two of
// the cgroups run a spinning process each, so their events are active on a CPU while read: such a read crosses to
// that CPU (an IPI), as reads of running containers do on a real node.
//
//	go test -run XXX -bench BenchmarkSampleCgroups -benchtime 200x ./pkg/agent/system/perf/
func BenchmarkSampleCgroups(b *testing.B) {
	for _, busy := range []int{0, 2} {
		b.Run(fmt.Sprintf("containers=200/busy=%d", busy), func(b *testing.B) { benchSample(b, 200, busy) })
	}
}

func benchSample(b *testing.B, containers, busy int) {
	// The machine-wide turn of the real-kernel tests (test/cgrouptest), so no other test's burners run meanwhile.
	lock, err := os.OpenFile(cgrouptest.LockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	var groups []*Group
	for i := range containers {
		dir := perfCgroup(b, fmt.Sprintf("bench-%d", i))
		if i < busy {
			burn(b, dir)
		}
		g, err := OpenCgroup(dir, cpus(), TaskClock, "/proc")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(g.Close)
		groups = append(groups, g)
	}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for b.Loop() {
		for _, g := range groups {
			if _, err := g.Read(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(float64(cpu)/float64(time.Millisecond), "cpu-ms/round")
	b.ReportMetric(float64(containers*len(cpus())), "reads/round")
}
