package statesinformer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func names(pods []*PodMeta) []string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Key())
	}
	return n
}

func withRV(p *corev1.Pod, rv string) *corev1.Pod { p.ResourceVersion = rv; return p }

func TestStorePods(t *testing.T) {
	s := NewStore()
	s.SetPod(withRV(testutil.Pod("b").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LS").Obj(), "1"))
	s.SetPod(withRV(testutil.Pod("a").Namespace("z").UID("uid-z-a").Obj(), "1"))
	s.SetPod(withRV(testutil.Pod("a").Obj(), "1"))
	s.SetPod(withRV(testutil.Pod("done").Phase(corev1.PodSucceeded).Obj(), "1"))
	if d := cmp.Diff([]string{"default/a", "default/b", "z/a"}, names(s.GetAllPods())); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
	b := s.GetPod("uid-b")
	if b == nil || b.QoS != slov1alpha1.QoSLS || b.Priority != slov1alpha1.PriorityProd {
		t.Errorf("GetPod(b) = %+v, want QoS LS, priority prod", b)
	}

	// A pod that ends is dropped at once.
	s.SetPod(withRV(testutil.Pod("b").Phase(corev1.PodFailed).Obj(), "2"))
	s.DeletePod("uid-a")
	if d := cmp.Diff([]string{"z/a"}, names(s.GetAllPods())); d != "" {
		t.Errorf("pods after end and delete (-want +got):\n%s", d)
	}

	// The caller owns the returned slice.
	got := s.GetAllPods()
	got[0] = nil
	if s.GetAllPods()[0] == nil {
		t.Error("GetAllPods returned the store's own slice")
	}

	s.ReplacePods([]*corev1.Pod{
		withRV(testutil.Pod("x").Obj(), "1"),
		withRV(testutil.Pod("y").Phase(corev1.PodSucceeded).Obj(), "1"),
	})
	if d := cmp.Diff([]string{"default/x"}, names(s.GetAllPods())); d != "" {
		t.Errorf("pods after replace (-want +got):\n%s", d)
	}
	if s.GetPod("uid-a") != nil {
		t.Error("a replaced pod is still there")
	}

	// The kubelet serves its newer status under the same resourceVersion: a container that started is taken.
	s.ReplacePods([]*corev1.Pod{withRV(testutil.Pod("x").Container("c").Running("containerd://new").Obj(), "1")})
	if m := s.GetPod("uid-x"); m == nil || len(m.Pod.Status.ContainerStatuses) != 1 {
		t.Errorf("a started container in the kubelet's list, same resourceVersion, was not taken: %+v", m)
	}
	// A static pod has no resourceVersion: an unchanged copy keeps the stored one (no change to report).
	static := func() *corev1.Pod { return testutil.Pod("etcd").Container("c").Running("containerd://e").Obj() }
	s.ReplacePods([]*corev1.Pod{static()})
	first := s.GetPod("uid-etcd")
	s.ReplacePods([]*corev1.Pod{static()})
	if first == nil || s.GetPod("uid-etcd") != first {
		t.Error("an unchanged static pod from the kubelet's list was replaced")
	}
}

// recorder records callback calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) fn(name string) func(Kind) {
	return func(k Kind) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, name+":"+string(k))
	}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// settle waits until no new callback arrives for a moment and returns what arrived.
func (r *recorder) settle(t *testing.T) []string {
	t.Helper()
	var all []string
	quiet := 0
	for quiet < 5 {
		time.Sleep(10 * time.Millisecond)
		if c := r.take(); len(c) > 0 {
			all, quiet = append(all, c...), 0
		} else {
			quiet++
		}
	}
	return all
}

func TestStoreCallbacks(t *testing.T) {
	s := NewStore()
	rec := &recorder{}
	s.RegisterCallback(KindPods, "first", rec.fn("first"))
	s.RegisterCallback(KindPods, "second", rec.fn("second"))
	s.RegisterCallback(KindNodeSLO, "slo", rec.fn("slo"))
	s.RegisterCallback(KindNodeMetric, "metric", rec.fn("metric"))
	s.RegisterCallback(KindNode, "node", rec.fn("node"))

	// Changes before the runner starts are coalesced into one call per callback.
	for i := range 10 {
		s.SetPod(withRV(testutil.Pod("p").Obj(), string(rune('0'+i))))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.RunCallbacks(ctx)
	if d := cmp.Diff([]string{"first:Pods", "second:Pods"}, rec.settle(t)); d != "" {
		t.Errorf("coalesced pod callbacks (-want +got):\n%s", d)
	}

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"same pod resourceVersion", func() { s.SetPod(withRV(testutil.Pod("p").Obj(), "9")) }, nil},
		{"pod ends", func() { s.SetPod(withRV(testutil.Pod("p").Phase(corev1.PodSucceeded).Obj(), "10")) }, []string{"first:Pods", "second:Pods"}},
		{"delete of an unknown pod", func() { s.DeletePod("nope") }, nil},
		{"NodeSLO appears", func() { s.SetNodeSLO(nodeSLO(65)) }, []string{"slo:NodeSLO"}},
		{"NodeSLO status-only update", func() { s.SetNodeSLO(nodeSLO(65)) }, nil},
		{"NodeSLO spec change", func() { s.SetNodeSLO(nodeSLO(70)) }, []string{"slo:NodeSLO"}},
		{"NodeSLO deleted", func() { s.SetNodeSLO(nil) }, []string{"slo:NodeSLO"}},
		{"NodeMetric appears", func() { s.SetNodeMetric(nodeMetric(60)) }, []string{"metric:NodeMetric"}},
		{"NodeMetric status write", func() {
			m := nodeMetric(60)
			m.Status.UpdateTime = &metav1.Time{Time: time.Unix(1, 0)}
			s.SetNodeMetric(m)
		}, nil},
		{"NodeMetric interval change", func() { s.SetNodeMetric(nodeMetric(30)) }, []string{"metric:NodeMetric"}},
		{"Node appears", func() { s.SetNode(withNodeRV("1")) }, []string{"node:Node"}},
		{"Node same resourceVersion", func() { s.SetNode(withNodeRV("1")) }, nil},
		{"Node updated", func() { s.SetNode(withNodeRV("2")) }, []string{"node:Node"}},
	}
	for _, st := range steps {
		st.change()
		if d := cmp.Diff(st.want, rec.settle(t)); d != "" {
			t.Errorf("%s: callbacks (-want +got):\n%s", st.name, d)
		}
	}
	if got := s.GetNodeMetric().Spec.CollectPolicy.ReportIntervalSeconds; *got != 30 {
		t.Errorf("NodeMetric report interval = %d, want the latest, 30", *got)
	}
}

func TestStoreHasSynced(t *testing.T) {
	s := NewStore()
	for _, k := range Kinds() {
		if s.HasSynced() {
			t.Fatalf("synced before %s", k)
		}
		s.MarkSynced(k)
	}
	if !s.HasSynced() {
		t.Fatal("not synced after every kind")
	}
}

func nodeSLO(cpuSuppress int64) *slov1alpha1.NodeSLO {
	return &slov1alpha1.NodeSLO{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			CPUSuppressThresholdPercent: ptr.To(cpuSuppress),
		}},
	}
}

func nodeMetric(interval int64) *slov1alpha1.NodeMetric {
	return &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec:       slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To(interval)}},
	}
}

func withNodeRV(rv string) *corev1.Node {
	n := testutil.Node("n1").Obj()
	n.ResourceVersion = rv
	return n
}
