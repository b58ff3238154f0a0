package nodemetric_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodemetric"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TestCollectPolicyFollowsColocationAndStatusIsKept: the spec follows the node's colocation strategy (defaults,
// cluster, node override), and updating it never touches the status the agent writes.
func TestCollectPolicyFollowsColocationAndStatusIsKept(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "default", Name: "slo-controller-config"}
	store := sloconfig.NewStore()
	e.StartManager(t, func(mgr ctrl.Manager) error {
		if err := sloconfigmap.New(store, key, nil).SetupWithManager(mgr); err != nil {
			return err
		}
		return nodemetric.New(store).SetupWithManager(mgr)
	})
	for _, n := range []*corev1.Node{testutil.Node("nm-gpu").Label("gpu", "true").Obj(), testutil.Node("nm-cpu").Obj()} {
		if err := e.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	waitPolicy := func(node string, aggregate, interval int64, windows ...time.Duration) *slov1alpha1.NodeMetric {
		t.Helper()
		m := &slov1alpha1.NodeMetric{}
		testenv.Eventually(t, "NodeMetric "+node, func() error {
			if err := e.Client.Get(ctx, types.NamespacedName{Name: node}, m); err != nil {
				return err
			}
			p := m.Spec.CollectPolicy
			if p == nil || *p.AggregateDurationSeconds != aggregate || *p.ReportIntervalSeconds != interval || len(p.NodeAggregatePolicy.Durations) != len(windows) {
				return fmt.Errorf("collect policy %+v", p)
			}
			for i, w := range windows {
				if p.NodeAggregatePolicy.Durations[i].Duration != w {
					return fmt.Errorf("window %d is %s, want %s", i, p.NodeAggregatePolicy.Durations[i].Duration, w)
				}
			}
			return nil
		})
		return m
	}
	// No ConfigMap: the defaults.
	m := waitPolicy("nm-gpu", 300, 60, 5*time.Minute, 10*time.Minute, 15*time.Minute)

	// The agent reports.
	m.Status = slov1alpha1.NodeMetricStatus{
		UpdateTime: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
	}
	if err := e.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{
		sloconfig.ColocationConfigKey: `{"metricReportIntervalSeconds": 30, "nodeConfigs": [{"name": "gpu",
			"nodeSelector": {"matchLabels": {"gpu": "true"}}, "metricAggregateDurationSeconds": 120, "metricAggregatePolicy": {"durations": ["2m"]}}]}`,
	}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	m = waitPolicy("nm-gpu", 120, 30, 2*time.Minute)
	waitPolicy("nm-cpu", 300, 30, 5*time.Minute, 10*time.Minute, 15*time.Minute)
	if m.Status.NodeMetric == nil || m.Status.NodeMetric.NodeUsage.Cpu().MilliValue() != 1500 || m.Status.UpdateTime == nil {
		t.Errorf("updating the spec lost the agent's status: %+v", m.Status)
	}
}
