package nodeallocation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// fixture is one running controller against the shared API server.
type fixture struct {
	t     *testing.T
	e     *testenv.Env
	c     client.WithWatch
	clock *clocktesting.FakeClock
	reg   *prometheus.Registry
}

var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// startController runs the controller alone in a manager of its own until the test ends.
func startController(t *testing.T) *fixture {
	t.Helper()
	e := env.Start(t)
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, e: e, c: c, clock: clocktesting.NewFakeClock(epoch), reg: prometheus.NewRegistry()}
	e.StartManager(t, New(Config{Clock: f.clock, Registerer: f.reg}).SetupWithManager)
	return f
}

func (f *fixture) setPhase(pod *corev1.Pod, phase corev1.PodPhase) {
	f.t.Helper()
	pod.Status.Phase = phase
	if err := f.c.Status().Update(context.Background(), pod); err != nil {
		f.t.Fatal(err)
	}
}

// want is a NodeAllocation status in strings, for readable expectations.
type want struct {
	Requests, Limits map[string]string
	ReqPct, LimPct   map[string]int64
	Pods             int32
}

func render(st slov1alpha1.NodeAllocationStatus) want {
	w := want{Requests: map[string]string{}, Limits: map[string]string{}, ReqPct: map[string]int64{}, LimPct: map[string]int64{}, Pods: st.PodCount}
	for n, q := range st.Requests {
		w.Requests[string(n)] = q.String()
	}
	for n, q := range st.Limits {
		w.Limits[string(n)] = q.String()
	}
	for n, p := range st.RequestsPercent {
		w.ReqPct[string(n)] = p
	}
	for n, p := range st.LimitsPercent {
		w.LimPct[string(n)] = p
	}
	return w
}

// expectAllocation waits until the node's NodeAllocation has the wanted status and returns it.
func (f *fixture) expectAllocation(node string, w want) *slov1alpha1.NodeAllocation {
	f.t.Helper()
	na := &slov1alpha1.NodeAllocation{}
	testenv.Eventually(f.t, "NodeAllocation "+node+" has the wanted status", func() error {
		if err := f.c.Get(context.Background(), client.ObjectKey{Name: node}, na); err != nil {
			return err
		}
		if d := cmp.Diff(w, render(na.Status)); d != "" {
			return fmt.Errorf("NodeAllocation %s status (-want +got):\n%s", node, d)
		}
		return nil
	})
	return na
}

func (f *fixture) expectNoAllocation(node string) {
	f.t.Helper()
	testenv.Eventually(f.t, "no NodeAllocation for "+node, func() error {
		err := f.c.Get(context.Background(), client.ObjectKey{Name: node}, &slov1alpha1.NodeAllocation{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("NodeAllocation %s still there (get: %w)", node, err)
	})
}

// gauge returns the value of a series in the fixture's registry, and whether it exists.
func (f *fixture) gauge(name, node, res string) (float64, bool) {
	f.t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "node") == node && label(m, "resource") == res {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// reconciles is how many reconciles the fixture's controller has finished, less those that only retried a write
// that lost a race with its own cache.
func (f *fixture) reconciles() uint64 {
	f.t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	var n, retries uint64
	for _, mf := range families {
		switch mf.GetName() {
		case "gleaner_nodeallocation_reconcile_duration_seconds":
			n = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		case "gleaner_nodeallocation_retries_total":
			retries = uint64(mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	return n - retries
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestNodeAllocationFollowsPodsAndNode(t *testing.T) {
	f := startController(t)
	ctx := context.Background()
	node := f.e.CreateNode(t, testutil.Node("life").Allocatable("cpu", "4", "memory", "8Gi", "pods", "110").Obj())

	a := f.e.CreatePod(t, testutil.Pod("life-a").Node("life").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2").Obj())
	na := f.expectAllocation("life", want{
		Requests: map[string]string{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "2", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 25, "memory": 12}, LimPct: map[string]int64{"cpu": 50, "memory": 0},
		Pods: 1,
	})
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "life", UID: node.UID, Controller: ptr.To(true)}}
	if d := cmp.Diff(wantOwner, na.OwnerReferences); d != "" {
		t.Errorf("owner references (-want +got):\n%s", d)
	}
	if na.Status.UpdateTime == nil || !na.Status.UpdateTime.Time.Equal(epoch) {
		t.Errorf("updateTime = %v, want the clock's %v", na.Status.UpdateTime, epoch)
	}
	// The gauges are set right after the write the test just saw.
	testenv.Eventually(t, "the allocation gauges are set", func() error {
		if v, ok := f.gauge("gleaner_node_allocated_requests_cpu_cores", "life", "cpu"); !ok || v != 1 {
			return fmt.Errorf("requests gauge for cpu = %v (present %v), want 1", v, ok)
		}
		if v, ok := f.gauge("gleaner_node_allocated_limits_cpu_cores", "life", "cpu"); !ok || v != 2 {
			return fmt.Errorf("limits gauge for cpu = %v (present %v), want 2", v, ok)
		}
		return nil
	})

	// A new pod.
	f.clock.Step(time.Minute)
	b := f.e.CreatePod(t, testutil.Pod("life-b").Node("life").Requests("cpu", "500m").Obj())
	na = f.expectAllocation("life", want{
		Requests: map[string]string{"cpu": "1500m", "memory": "1Gi", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "2", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 37, "memory": 12}, LimPct: map[string]int64{"cpu": 50, "memory": 0},
		Pods: 2,
	})
	if !na.Status.UpdateTime.Time.Equal(epoch.Add(time.Minute)) {
		t.Errorf("updateTime = %v after a change, want %v", na.Status.UpdateTime, epoch.Add(time.Minute))
	}

	// The node's allocatable halves.
	node.Status.Allocatable[corev1.ResourceCPU] = testutil.Node("x").Allocatable("cpu", "2").Obj().Status.Allocatable[corev1.ResourceCPU]
	if err := f.c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	f.expectAllocation("life", want{
		Requests: map[string]string{"cpu": "1500m", "memory": "1Gi", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "2", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 75, "memory": 12}, LimPct: map[string]int64{"cpu": 100, "memory": 0},
		Pods: 2,
	})

	// A pod completes: it no longer counts.
	f.setPhase(a, corev1.PodSucceeded)
	f.expectAllocation("life", want{
		Requests: map[string]string{"cpu": "500m", "memory": "0", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 25, "memory": 0}, LimPct: map[string]int64{"cpu": 0, "memory": 0},
		Pods: 1,
	})

	// A pod is deleted.
	if err := f.c.Delete(ctx, b, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.expectAllocation("life", want{
		Requests: map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 0, "memory": 0}, LimPct: map[string]int64{"cpu": 0, "memory": 0},
	})

	// The node goes: so do its NodeAllocation and its series.
	if err := f.c.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	f.expectNoAllocation("life")
	testenv.Eventually(t, "the deleted node's gauges are removed", func() error {
		if _, ok := f.gauge("gleaner_node_allocated_requests_cpu_cores", "life", "cpu"); ok {
			return errors.New("the deleted node's requests series is still exported")
		}
		return nil
	})
}

// TestUnrelatedUpdatesWriteNothing checks the predicates and the write guard on a real API server: heartbeats, label
// changes and pod status updates neither reconcile nor write. Writes are counted on a watch of the NodeAllocation,
// reconciles on the controller's histogram; two pod creations after the noise are the sync points.
func TestUnrelatedUpdatesWriteNothing(t *testing.T) {
	f := startController(t)
	ctx := context.Background()
	node := f.e.CreateNode(t, testutil.Node("quiet").Allocatable("cpu", "4", "memory", "8Gi").Obj())
	node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(epoch)
	p1 := f.e.CreatePod(t, testutil.Pod("quiet-1").Node("quiet").Requests("cpu", "1").Obj())
	base := want{
		Requests: map[string]string{"cpu": "1", "memory": "0", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 25, "memory": 0}, LimPct: map[string]int64{"cpu": 0, "memory": 0},
		Pods: 1,
	}
	na := f.expectAllocation("quiet", base)
	// Let the reconciles of the set-up settle: the count must not move while nothing happens.
	var settled uint64
	testenv.Eventually(t, "the set-up's reconciles settle", func() error {
		before := f.reconciles()
		time.Sleep(300 * time.Millisecond)
		if settled = f.reconciles(); settled != before {
			return fmt.Errorf("still reconciling (%d -> %d)", before, settled)
		}
		return nil
	})

	w, err := f.c.Watch(ctx, &slov1alpha1.NodeAllocationList{}, client.MatchingFields{"metadata.name": "quiet"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: na.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	for i := range 5 {
		node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(epoch.Add(time.Duration(i+1) * 10 * time.Second))
		if err := f.c.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	node.Labels = map[string]string{"topology.kubernetes.io/zone": "z1"}
	if err := f.c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	p1.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := f.c.Status().Update(ctx, p1); err != nil {
		t.Fatal(err)
	}
	p1.Labels = map[string]string{"app": "x"}
	if err := f.c.Update(ctx, p1); err != nil {
		t.Fatal(err)
	}

	f.e.CreatePod(t, testutil.Pod("quiet-2").Node("quiet").Requests("cpu", "500m").Obj())
	f.e.CreatePod(t, testutil.Pod("quiet-3").Node("quiet").Requests("cpu", "500m").Obj())
	base.Requests["cpu"], base.ReqPct["cpu"], base.Pods = "2", 50, 3
	f.expectAllocation("quiet", base)

	// Every write shows on the watch in order: the two pod creations may be one write or two (they can share a
	// reconcile), never more.
	var writes []string
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				t.Fatalf("unexpected %s event on the NodeAllocation", ev.Type)
			}
			na := ev.Object.(*slov1alpha1.NodeAllocation)
			writes = append(writes, fmt.Sprintf("rv %s: %d pods, cpu %s", na.ResourceVersion, na.Status.PodCount, na.Status.Requests.Cpu()))
			done = na.Status.PodCount == 3
		case <-time.After(30 * time.Second):
			t.Fatal("the watch never showed the last write")
		}
	}
	if len(writes) < 1 || len(writes) > 2 {
		t.Errorf("%d status writes for 2 pod creations amid heartbeats and label/status updates, want 1 or 2:\n%s", len(writes), strings.Join(writes, "\n"))
	}
	testenv.Eventually(t, "the reconcile count settles", func() error {
		if got := f.reconciles() - settled; got < 1 || got > 2 {
			return fmt.Errorf("%d reconciles for 2 pod creations, want 1 or 2: unrelated updates got through the predicates", got)
		}
		return nil
	})
}

func TestNodeAllocationIsRepaired(t *testing.T) {
	f := startController(t)
	ctx := context.Background()
	stale := &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: "fix", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Node", Name: "fix", UID: "uid-of-a-deleted-node", Controller: ptr.To(true)},
	}}}
	if err := f.c.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), stale) })
	node := f.e.CreateNode(t, testutil.Node("fix").Capacity("cpu", "2").Obj())
	empty := want{
		Requests: map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		Limits:   map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "0"},
		ReqPct:   map[string]int64{"cpu": 0}, LimPct: map[string]int64{"cpu": 0},
	}
	na := f.expectAllocation("fix", empty)
	if len(na.OwnerReferences) != 1 || na.OwnerReferences[0].UID != node.UID {
		t.Errorf("owner references = %+v, want the new node %s", na.OwnerReferences, node.UID)
	}

	// Deleted by hand, it comes back.
	if err := f.c.Delete(ctx, na); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the deleted NodeAllocation is recreated", func() error {
		got := &slov1alpha1.NodeAllocation{}
		if err := f.c.Get(ctx, client.ObjectKey{Name: "fix"}, got); err != nil {
			return err
		}
		if got.UID == na.UID {
			return errors.New("not deleted yet")
		}
		return nil
	})
	f.expectAllocation("fix", empty)
}
