package manager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestSlimNodeMetricKeepsWhatPluginsRead(t *testing.T) {
	pod := testutil.Pod("p").Obj()
	full := testutil.NodeMetric("n").Updated(time.Now()).NodeUsage("cpu", "2").SystemUsage("cpu", "500m").
		Pod(pod, "cpu", "1").HostApp("app", "prod", "cpu", "100m").ProdReclaimable("cpu", "1").Obj()
	full.Status.NodeMetric.AggregatedNodeUsages = []slov1alpha1.AggregatedUsage{{Duration: metav1.Duration{Duration: time.Minute}}}
	full.Status.NodeMetric.AggregatedSystemUsages = full.Status.NodeMetric.AggregatedNodeUsages
	// Both forms of the pods' usage, that of an agent one release older and the current one.
	full.Status.PodUsages = testutil.AsPodUsages(full).Status.PodUsages
	got, err := slimNodeMetric(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := full.DeepCopy()
	want.Status.NodeMetric.AggregatedNodeUsages, want.Status.NodeMetric.AggregatedSystemUsages = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slim NodeMetric (-want +got):\n%s", diff)
	}
}
