package cpusuppress

import (
	"context"
	"fmt"
	"testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// BenchmarkRun is the cost of one steady-state run (a decision that changes nothing, the common case) on a node
// of 8 CPUs with 200 pods, half of them best-effort, reading this machine's real /proc/stat and a fixture cgroup
// tree. At the default interval the plugin runs 5 times a second.
func BenchmarkRun(b *testing.B) {
	for _, policy := range []string{"cfsQuota", "cpuset"} {
		b.Run(policy, func(b *testing.B) {
			r := newRig(b, cgroup.V1, 8, "7500m", hostsim.Config{})
			for i := range 100 {
				be := tu.Pod(fmt.Sprint("batch-", i)).UID(fmt.Sprint("be-", i)).Container("c").Running(fmt.Sprint("containerd://be", i)).Obj()
				ls := tu.Pod(fmt.Sprint("web-", i)).UID(fmt.Sprint("ls-", i)).Container("c").Requests("cpu", "10m").Running(fmt.Sprint("containerd://ls", i)).Obj()
				r.addPod(be, 0)
				r.addPod(ls, 0)
			}
			pr, err := proc.New("/proc")
			if err != nil {
				b.Fatal(err)
			}
			r.p.d.Proc = pr
			s := spec(slov1alpha1.CPUSuppressPolicy(policy), 65, 0)
			ctx := context.Background()
			for range 3 { // the first sample, the first decision and its writes
				r.Clock.Step(DefaultInterval)
				if err := r.p.Run(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				r.Clock.Step(DefaultInterval)
				if err := r.p.Run(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
