package batch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// An agent from before status.podUsages reports its pods in status.podsMetric: the manager must publish the same
// batch resources, with the same derivation, from either form of the same report, under every policy, with pods
// the report does not measure, records of pods the manager does not hold (high- and low-priority), an LSE pod and
// records that must be clamped (whose warning names the pod by UID in the new form).
func TestOldAndNewReportsAgree(t *testing.T) {
	lse := testutil.Pod("lse").Node("n1").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LSE").Requests("cpu", "2", "memory", "1Gi").Obj()
	withRecords := func() *testutil.NodeMetricBuilder {
		return metric().Pod(lse, "cpu", "700m", "memory", "600Mi").
			PodRecord("default", "ghost", "uid-ghost", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "400m", "memory", "1Gi").
			PodRecord("default", "ghost-be", "uid-ghost-be", slov1alpha1.PriorityNone, slov1alpha1.QoSBE, "cpu", "2", "memory", "2Gi").
			PodRecord("default", "gone", "uid-gone", slov1alpha1.PriorityMid, "", "cpu", "100m")
	}
	policies := map[string]func(*sloconfig.ColocationStrategy){
		"usage": nil,
		"maxUsageRequest": func(s *sloconfig.ColocationStrategy) {
			s.CPUCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
			s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
		},
		"request for memory": func(s *sloconfig.ColocationStrategy) {
			s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByRequest)
		},
	}
	reports := map[string]*slov1alpha1.NodeMetric{
		"pods of the cache":      metric().Obj(),
		"records without a pod":  withRecords().Obj(),
		"a pod usage to clamp":   withRecords().Pod(testutil.Pod("big").Node("n1").Priority(9000).Obj(), "cpu", "-3", "memory", "100Gi").Obj(),
		"no pod measured at all": testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Obj(),
	}
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	for policy, mutate := range policies {
		for report, old := range reports {
			t.Run(policy+"/"+report, func(t *testing.T) {
				calc := func(m *slov1alpha1.NodeMetric) []framework.ResourceItem {
					pods := append(pods(), lse)
					in := &framework.Input{Node: node(), Pods: podcache.FromPods(pods...), Metric: m, Strategy: strategy(mutate), Now: now}
					items, err := New().Calculate(in)
					if err != nil {
						t.Fatal(err)
					}
					return items
				}
				want, got := calc(old), calc(testutil.AsPodUsages(old))
				if len(old.Status.PodsMetric) > 0 && len(want[0].Derivation.Terms) == 0 {
					t.Fatalf("the old report gave no derivation: %+v", want)
				}
				// The one difference: a clamped pod is named by its UID, the one identity podUsages carries.
				for i := range want {
					for j, w := range want[i].Derivation.Warnings {
						want[i].Derivation.Warnings[j] = renameClamped(w)
					}
				}
				if d := cmp.Diff(want, got, quantity); d != "" {
					t.Errorf("from podUsages (+) against podsMetric (-):\n%s", d)
				}
			})
		}
	}
}

// renameClamped names the test's clamped pod by UID, as a warning from podUsages does.
func renameClamped(w string) string {
	return strings.ReplaceAll(w, "pod default/big ", "pod uid uid-big ")
}
