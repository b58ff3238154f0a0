package noderesource_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/cli"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

type harness struct {
	c       client.Client
	clock   *clocktesting.FakeClock
	metrics *prometheus.Registry
	// topologyGets counts the manager's GETs of single NodeResourceTopology objects from the API server.
	topologyGets *atomic.Int64
}

var (
	once   sync.Once
	shared *harness
	// configMap is where the test's slo-controller-config lives.
	configMap = types.NamespacedName{Namespace: "gleaner-system", Name: "slo-controller-config"}
)

// colocationConfig enables colocation cluster-wide; nodes labelled colocation=gray get the "gray" node config,
// which keeps it on or turns it off.
func colocationConfig(grayEnabled bool) string {
	return fmt.Sprintf(`{"enable": true, "nodeConfigs": [
		{"name": "gray", "nodeSelector": {"matchLabels": {"colocation": "gray"}}, "enable": %t}]}`, grayEnabled)
}

// start runs, for the whole package, one manager with the real SLO config loader and the noderesource controller
// sharing one config store, on a fake clock, with colocation enabled by the ConfigMap. The controller's workqueue
// waits on that clock too: a RequeueAfter (a NodeMetric going stale) comes due when a test steps the clock, and so
// does the back-off of a reconcile that failed (none should here).
func start(t *testing.T) *harness {
	e := env.Start(t)
	once.Do(func() {
		ctx := context.Background()
		// The NodeResourceTopology CRD must exist before the controller starts: it decides then whether to watch it.
		e.InstallTopologyCRD(t)
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: configMap.Namespace}},
			&corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: configMap.Namespace, Name: configMap.Name},
				Data:       map[string]string{sloconfig.ColocationConfigKey: colocationConfig(true)},
			},
		} {
			must(t, e.Client.Create(ctx, obj))
		}
		for _, pc := range tu.PriorityClasses() {
			must(t, e.Client.Create(ctx, pc))
		}
		h := &harness{c: e.Client, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), metrics: prometheus.NewRegistry(),
			topologyGets: &atomic.Int64{}}
		h.publishedBefore(t, "restarted")
		// Count the manager's GETs of one NodeResourceTopology (a list or watch has no name in its path).
		topologyGets := h.topologyGets
		cfg := rest.CopyConfig(e.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/noderesourcetopologies/") {
					topologyGets.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
		opts := ctrl.Options{
			Scheme: e.Scheme,
			// The manager's own cache transforms: what the tests below see is what gleaner-manager's cache keeps.
			Cache:                  manager.CacheOptions(configMap.Namespace),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		}
		report := testenv.PrepareManager(&opts)
		mgr, err := ctrl.NewManager(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		store := sloconfig.NewStore()
		must(t, sloconfigmap.New(store, configMap, nil).SetupWithManager(mgr))
		must(t, noderesource.New(store, h.clock, h.metrics, noderesource.DefaultOptions()).SetupWithManager(mgr))
		env.StartShared(mgr, report)
		shared = h
	})
	if shared == nil {
		t.Fatal("the shared manager failed to start in an earlier test")
	}
	return shared
}

// makeNode creates a node of 8 cores and 16Gi with a prod pod using 1 core, and its NodeMetric with 800m of
// system usage: batch-cpu = 8000 - 3200 (40% margin) - 800 - 1000 = 3000.
func (h *harness) makeNode(t *testing.T, name string, labels map[string]string) *corev1.Pod {
	prod := h.makeNodeWithoutMetric(t, name, labels)
	h.writeMetric(t, name, prod, "800m")
	return prod
}

// makeNodeWithoutMetric is makeNode before the node's agent reports: no NodeMetric.
func (h *harness) makeNodeWithoutMetric(t *testing.T, name string, labels map[string]string) *corev1.Pod {
	ctx := context.Background()
	nb := tu.Node(name).Capacity("cpu", "8", "memory", "16Gi", "pods", "110").Allocatable("cpu", "8", "memory", "16Gi", "pods", "110")
	for k, v := range labels {
		nb.Label(k, v)
	}
	node := nb.Obj()
	status := node.Status
	must(t, h.c.Create(ctx, node))
	node.Status = status
	must(t, h.c.Status().Update(ctx, node))
	prod := tu.Pod(name+"-prod").Node(name).PriorityClass("gleaner-prod").Requests("cpu", "2", "memory", "4Gi").Obj()
	prod.UID = ""
	must(t, h.c.Create(ctx, prod))
	return prod
}

// writeMetric writes the NodeMetric status the agent would, stamped with the fake clock, the pods in
// status.podUsages as agents write them since the compact report.
func (h *harness) writeMetric(t *testing.T, node string, prod *corev1.Pod, systemCPU string) {
	h.writeMetricAs(t, node, prod, systemCPU, tu.AsPodUsages)
}

// writeMetricAs is writeMetric with the report in the form agent gives it (tu.AsPodUsages for a current agent, the
// builder's podsMetric as it is for an agent one release older).
func (h *harness) writeMetricAs(t *testing.T, node string, prod *corev1.Pod, systemCPU string, agent func(*slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric) {
	ctx := context.Background()
	want := agent(tu.NodeMetric(node).Updated(h.clock.Now()).
		NodeUsage("cpu", "2", "memory", "6Gi").SystemUsage("cpu", systemCPU, "memory", "1Gi").
		Pod(prod, "cpu", "1", "memory", "3Gi").ProdReclaimable("cpu", "500m", "memory", "1Gi").Obj())
	nm := &slov1alpha1.NodeMetric{}
	if err := h.c.Get(ctx, client.ObjectKey{Name: node}, nm); err != nil {
		nm = &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}
		must(t, h.c.Create(ctx, nm))
	}
	nm.Status = want.Status
	must(t, h.c.Status().Update(ctx, nm))
}

func (h *harness) node(t *testing.T, name string) *corev1.Node {
	n := &corev1.Node{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Name: name}, n))
	return n
}

// waitBatchCPU waits until the node publishes batch-cpu = want ("" = absent).
func (h *harness) waitBatchCPU(t *testing.T, name, want string) *corev1.Node {
	t.Helper()
	var n *corev1.Node
	testenv.Eventually(t, "node "+name+" publishes batch-cpu "+want, func() error {
		n = h.node(t, name)
		got, ok := n.Status.Allocatable[slov1alpha1.BatchCPU]
		switch {
		case want == "" && !ok:
			return nil
		case want == "" && ok:
			return fmt.Errorf("batch-cpu still %s", got.String())
		case !ok:
			return fmt.Errorf("no batch-cpu yet")
		case got.Cmp(resource.MustParse(want)) != 0:
			return fmt.Errorf("batch-cpu = %s, want %s", got.String(), want)
		}
		return nil
	})
	return n
}

// explanation waits until the node's NodeResourceExplanation explains the values n carries (it is written after
// the node) and returns its status.
func explanation(t *testing.T, n *corev1.Node) slov1alpha1.NodeResourceExplanationStatus {
	t.Helper()
	return explanationObject(t, n).Status
}

// explanationObject waits until the node's NodeResourceExplanation explains the values n carries, and returns it.
func explanationObject(t *testing.T, n *corev1.Node) *slov1alpha1.NodeResourceExplanation {
	t.Helper()
	exp := &slov1alpha1.NodeResourceExplanation{}
	testenv.Eventually(t, "the NodeResourceExplanation of node "+n.Name+" explains its values", func() error {
		if err := shared.c.Get(context.Background(), client.ObjectKey{Name: n.Name}, exp); err != nil {
			return err
		}
		return disagreement(n, exp.Status)
	})
	return exp
}

// disagreement says how the explanation's values (resources and annotations) differ from the node's, nil when they
// do not.
func disagreement(n *corev1.Node, exp slov1alpha1.NodeResourceExplanationStatus) error {
	if len(exp.Resources) == 0 {
		return fmt.Errorf("no derivations")
	}
	for _, d := range exp.Resources {
		q, ok := n.Status.Allocatable[d.Resource]
		switch {
		case d.Value == nil && ok:
			return fmt.Errorf("%s explained as removed, the node carries %s", d.Resource, q.String())
		case d.Value != nil && (!ok || q.Cmp(*d.Value) != 0):
			return fmt.Errorf("%s explained as %s, the node carries %s", d.Resource, d.Value.String(), q.String())
		}
	}
	for _, d := range exp.Annotations {
		v, ok := n.Annotations[d.Annotation]
		switch {
		case d.Value == nil && ok && !strings.HasPrefix(d.Reason, slov1alpha1.AnnotationKeptPrefix):
			return fmt.Errorf("%s explained as removed, the node carries %s", d.Annotation, v)
		case d.Value != nil && (!ok || v != *d.Value):
			return fmt.Errorf("%s explained as %s, the node carries %q", d.Annotation, *d.Value, v)
		}
	}
	return nil
}

// termDetail is the detail of the derivation's term name, "" when it has none.
func termDetail(d *slov1alpha1.ResourceDerivation, name string) string {
	for _, tm := range d.Terms {
		if tm.Name == name {
			return tm.Detail
		}
	}
	return ""
}

func derivation(exp slov1alpha1.NodeResourceExplanationStatus, r corev1.ResourceName) *slov1alpha1.ResourceDerivation {
	for i := range exp.Resources {
		if exp.Resources[i].Resource == r {
			return &exp.Resources[i]
		}
	}
	return nil
}

// TestRestartKeepsTheForcedUpdateClock: the manager learns when a node was last published from its
// NodeResourceExplanation (listed once at start-up), so the forced update (updateTimeThresholdSeconds, 5 minutes)
// comes due 5 minutes after that write, not never. publishedBefore set the node up before the manager started.
// It is the first test of the package (declared before any test that steps the clock): the NodeMetric must stay
// fresh until it steps the clock itself.
func TestRestartKeepsTheForcedUpdateClock(t *testing.T) {
	h := start(t)
	started := h.clock.Now()
	// The first reconcile calculates 3000 and does not write: within 10% of 2900, and the last write a minute ago.
	testenv.Eventually(t, "the controller calculates 3000 for node restarted", func() error {
		if v := h.gauge(t, "gleaner_noderesource_cpu_cores", map[string]string{"node": "restarted", "resource": string(slov1alpha1.BatchCPU)}); v != 3 {
			return fmt.Errorf("gauge = %v", v)
		}
		return nil
	})
	waitIdle(t)
	testenv.Consistently(t, time.Second, func() error {
		if q := h.node(t, "restarted").Status.Allocatable[slov1alpha1.BatchCPU]; q.Value() != 2900 {
			return fmt.Errorf("node written at start-up (batch-cpu %s) although its last write, a minute ago, was recent", q.String())
		}
		return nil
	})
	// Four minutes on, five after the last write: the forced update writes what moved.
	h.clock.Step(4*time.Minute + time.Second)
	n := h.waitBatchCPU(t, "restarted", "3000")
	// The explanation named the deleted node as its owner: it was made again, owned by this one.
	obj := explanationObject(t, n)
	if refs := obj.OwnerReferences; len(refs) != 1 || refs[0].UID != n.UID {
		t.Errorf("owner references = %+v, want node %s alone", refs, n.UID)
	}
	if want := h.clock.Now().Truncate(time.Second); !obj.Status.UpdateTime.Time.Equal(want) {
		t.Errorf("explanation of %v, want the write of %v", obj.Status.UpdateTime, want)
	}
	// The NodeMetric has been usable since before the restart: the condition keeps its transition time.
	expectMetricUsable(t, obj.Status, metav1.ConditionTrue, slov1alpha1.ReasonNodeMetricFresh, started.Add(-time.Hour))
}

// expectMetricUsable checks the explanation's NodeMetricUsable condition: its status, reason and lastTransitionTime
// (to the second).
func expectMetricUsable(t *testing.T, st slov1alpha1.NodeResourceExplanationStatus, status metav1.ConditionStatus, reason string, since time.Time) {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, slov1alpha1.NodeMetricUsable)
	switch {
	case c == nil:
		t.Errorf("the explanation has no %s condition: %+v", slov1alpha1.NodeMetricUsable, st.Conditions)
	case c.Status != status || c.Reason != reason || c.Message == "":
		t.Errorf("%s = %s/%s (%q), want %s/%s with a message", c.Type, c.Status, c.Reason, c.Message, status, reason)
	case !c.LastTransitionTime.Time.Equal(since.Truncate(time.Second)):
		t.Errorf("%s changed at %v, want %v", c.Type, c.LastTransitionTime.UTC(), since.Truncate(time.Second).UTC())
	}
}

// expectExplanationBesideNode checks that the node carries no annotation of Gleaner's and that its explanation is
// an object of its own, owned by the node; it returns the explanation once it explains the node's values.
func expectExplanationBesideNode(t *testing.T, n *corev1.Node) *slov1alpha1.NodeResourceExplanation {
	t.Helper()
	for k := range n.Annotations {
		if strings.Contains(k, "gleaner") {
			t.Errorf("the node carries the annotation %s", k)
		}
	}
	obj := explanationObject(t, n)
	if refs := obj.OwnerReferences; len(refs) != 1 || refs[0].UID != n.UID || refs[0].Kind != "Node" || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("owner references of the explanation = %+v, want the node %s", refs, n.UID)
	}
	return obj
}

func TestPublishesBatchResources(t *testing.T) {
	h := start(t)
	h.makeNode(t, "publish", nil)
	n := h.waitBatchCPU(t, "publish", "3000")

	// memory: 16Gi - 35% margin - max(1Gi system, 0 reserved) - 3Gi prod usage.
	wantMem := int64(16<<30) - int64(16<<30)*35/100 - (1 << 30) - (3 << 30)
	if got := n.Status.Allocatable[slov1alpha1.BatchMemory]; got.Value() != wantMem {
		t.Errorf("batch-memory = %d, want %d", got.Value(), wantMem)
	}
	for _, r := range []corev1.ResourceName{slov1alpha1.BatchCPU, slov1alpha1.BatchMemory, slov1alpha1.MidCPU, slov1alpha1.MidMemory} {
		c, a := n.Status.Capacity[r], n.Status.Allocatable[r]
		if c.Cmp(a) != 0 {
			t.Errorf("%s: capacity %s != allocatable %s", r, c.String(), a.String())
		}
	}
	// mid-cpu = min(min(500m reclaimable, 8 - 2 used), 100% cap) = 500.
	if got := n.Status.Allocatable[slov1alpha1.MidCPU]; got.Value() != 500 {
		t.Errorf("mid-cpu = %s, want 500", got.String())
	}

	exp := expectExplanationBesideNode(t, n).Status
	d := derivation(exp, slov1alpha1.BatchCPU)
	if d == nil || d.Value == nil || d.Value.Cmp(n.Status.Allocatable[slov1alpha1.BatchCPU]) != 0 {
		t.Fatalf("explanation does not match the published batch-cpu: %+v", d)
	}
	terms := map[string]int64{}
	for _, tm := range d.Terms {
		terms[tm.Name] = tm.Value.MilliValue()
	}
	if got := terms["capacity"] - terms["safetyMargin"] - terms["systemUsed"] - terms["hpUsed"]; got != terms["calculated"] || got != 3000 {
		t.Errorf("terms do not add up: %v", terms)
	}
	if d.MetricTime == nil || !d.MetricTime.Time.Equal(h.clock.Now()) {
		t.Errorf("metric time = %v, want %v", d.MetricTime, h.clock.Now())
	}
	if v := h.gauge(t, "gleaner_noderesource_cpu_cores", map[string]string{"node": "publish", "resource": string(slov1alpha1.BatchCPU)}); v != 3 {
		t.Errorf("value gauge = %v, want 3 (cores)", v)
	}

	// kubectl glean explain shows the numbers that are on the node, and no warning for an in-range report.
	out := explain(t, h, "publish")
	if strings.Contains(out, "warning") {
		t.Errorf("explain warns of an in-range report:\n%s", out)
	}
	for r, q := range map[corev1.ResourceName]resource.Quantity{
		slov1alpha1.BatchCPU: n.Status.Allocatable[slov1alpha1.BatchCPU], slov1alpha1.BatchMemory: n.Status.Allocatable[slov1alpha1.BatchMemory],
		slov1alpha1.MidCPU: n.Status.Allocatable[slov1alpha1.MidCPU],
	} {
		if want := fmt.Sprintf("%s = %d ", r, q.Value()); !strings.Contains(out, want) {
			t.Errorf("explain does not show %q, the node's value:\n%s", want, out)
		}
	}
	for _, want := range []string{"capacity", "safetyMargin", "kubeletReserved", "annotationReserved", "systemUsed", "hpUnattributed", "hpUsed", "calculated"} {
		if !strings.Contains(out, "    "+want+" ") {
			t.Errorf("explain lacks the %s term:\n%s", want, out)
		}
	}
}

// An agent one release older reports its pods in status.podsMetric: the manager publishes from it what it publishes
// from a current agent's status.podUsages (TestPublishesBatchResources' node), and the explanation shows the pod's
// usage counted. Without reading podsMetric the prod pod would count at its request (2 cores, not 1): batch-cpu
// 2000.
func TestOldAgentsReportPublishesTheSame(t *testing.T) {
	h := start(t)
	h.makeNode(t, "skew-new", nil)
	prod := h.makeNodeWithoutMetric(t, "skew-old", nil)
	h.writeMetricAs(t, "skew-old", prod, "800m", func(m *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric { return m })
	nm := &slov1alpha1.NodeMetric{}
	must(t, h.c.Get(context.Background(), client.ObjectKey{Name: "skew-old"}, nm))
	if len(nm.Status.PodsMetric) != 1 || len(nm.Status.PodUsages) != 0 {
		t.Fatalf("the old agent's report as stored: %+v", nm.Status)
	}
	newNode, oldNode := h.waitBatchCPU(t, "skew-new", "3000"), h.waitBatchCPU(t, "skew-old", "3000")
	for _, r := range []corev1.ResourceName{slov1alpha1.BatchCPU, slov1alpha1.BatchMemory, slov1alpha1.MidCPU, slov1alpha1.MidMemory} {
		n, o := newNode.Status.Allocatable[r], oldNode.Status.Allocatable[r]
		if n.Cmp(o) != 0 || n.IsZero() {
			t.Errorf("%s: %s from podUsages, %s from podsMetric; want equal and not 0", r, n.String(), o.String())
		}
	}
	d := derivation(expectExplanationBesideNode(t, oldNode).Status, slov1alpha1.BatchCPU)
	if d == nil || !strings.Contains(termDetail(d, "hpUsed"), "0 without metric") {
		t.Errorf("the old agent's pod record was not used: %+v", d)
	}
}

func TestNewHighPriorityPodLowersBatch(t *testing.T) {
	h := start(t)
	h.makeNode(t, "newpod", nil)
	h.waitBatchCPU(t, "newpod", "3000")
	// No metric for the new pod yet: it counts at its 1-core request.
	must(t, h.c.Create(context.Background(), tu.Pod("newpod-ls").Node("newpod").Requests("cpu", "1", "memory", "1Gi").Obj()))
	n := h.waitBatchCPU(t, "newpod", "2000")
	d := derivation(explanation(t, n), slov1alpha1.BatchCPU)
	found := false
	for _, tm := range d.Terms {
		if tm.Name == "hpUsed" {
			found = tm.Detail == "usage of 2 high-priority pods, 1 without metric at request, plus hpUnattributed"
		}
	}
	if !found {
		t.Errorf("explanation does not say one pod counted at request: %+v", d.Terms)
	}
}

// TestLabelledBEPodIsBatch: a pod that says it is best-effort only by its QoS label, without a batch priority,
// is batch; its usage does not shrink the capacity it runs in. Usage of a pod the manager does not hold still
// counts.
func TestLabelledBEPodIsBatch(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	prod := h.makeNode(t, "classes", nil)
	h.waitBatchCPU(t, "classes", "3000")

	be := tu.Pod("classes-be").Node("classes").Label(slov1alpha1.LabelQoSClassAlias, "BE").Requests("cpu", "1", "memory", "1Gi").Obj()
	be.UID = ""
	must(t, h.c.Create(ctx, be))
	// The agent reports the BE pod using 2 cores, and a prod pod the manager has not seen (yet) using 500m:
	// 8000 - 3200 - 800 - (1000 prod + 500 unattributed) = 2500. Were the BE pod high-priority, 500.
	nm := &slov1alpha1.NodeMetric{}
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "classes"}, nm))
	nm.Status = tu.NodeMetric("classes").Updated(h.clock.Now()).
		NodeUsage("cpu", "4", "memory", "6Gi").SystemUsage("cpu", "800m", "memory", "1Gi").
		Pod(prod, "cpu", "1", "memory", "3Gi").Pod(be, "cpu", "2", "memory", "1Gi").
		PodRecord("default", "classes-unseen", "uid-classes-unseen", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "500m", "memory", "256Mi").
		ProdReclaimable("cpu", "500m", "memory", "1Gi").Obj().Status
	must(t, h.c.Status().Update(ctx, nm))

	n := h.waitBatchCPU(t, "classes", "2500")
	terms := map[string]string{}
	for _, tm := range derivation(explanation(t, n), slov1alpha1.BatchCPU).Terms {
		terms[tm.Name] = tm.Value.String()
	}
	if terms["hpUsed"] != "1500m" || terms["hpUnattributed"] != "500m" || terms["hpRequests"] != "2" {
		t.Errorf("terms %v: want hpRequests 2 (the prod pod alone), hpUnattributed 500m, hpUsed 1500m", terms)
	}
}

// TestNodeReservationAnnotation: a malformed reservation is ignored with a Warning event and a reason in the
// explanation; a valid one reserves what it says.
func TestNodeReservationAnnotation(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	h.makeNode(t, "reserve", nil)
	h.waitBatchCPU(t, "reserve", "3000")

	patch := func(value string) {
		n := h.node(t, "reserve")
		orig := n.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[slov1alpha1.AnnotationNodeReservationAlias] = value
		must(t, h.c.Patch(ctx, n, client.MergeFrom(orig)))
	}
	patch(`{"reservedCPUs": 2}`)
	testenv.Eventually(t, "a Warning event about the reservation of node reserve", func() error {
		var list eventsv1.EventList
		if err := h.c.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "Node" && ev.Regarding.Name == "reserve" && ev.Type == corev1.EventTypeWarning && ev.Reason == "InvalidNodeReservation" &&
				strings.Contains(ev.Note, "node annotation node.koordinator.sh/reservation ignored: decoding") {
				return nil
			}
		}
		return fmt.Errorf("no such event among %d", len(list.Items))
	})
	if got := h.node(t, "reserve").Status.Allocatable.Name(slov1alpha1.BatchCPU, resource.DecimalSI); got.Value() != 3000 {
		t.Errorf("batch-cpu = %s with a malformed reservation, want 3000 as without one", got)
	}

	// Two reserved cores: systemUsed = max(800 system, 2000 reserved): 8000 - 3200 - 2000 - 1000 = 1800.
	patch(`{"reservedCPUs": "0-1"}`)
	n := h.waitBatchCPU(t, "reserve", "1800")
	for _, tm := range derivation(explanation(t, n), slov1alpha1.BatchCPU).Terms {
		if tm.Name == "annotationReserved" && (tm.Value.String() != "2" || tm.Detail != "node annotation node.koordinator.sh/reservation") {
			t.Errorf("annotationReserved term = %+v", tm)
		}
	}
}

func TestDiffThreshold(t *testing.T) {
	h := start(t)
	prod := h.makeNode(t, "diff", nil)
	n := h.waitBatchCPU(t, "diff", "3000")
	rv, expRV := n.ResourceVersion, explanationObject(t, n).ResourceVersion
	labels := map[string]string{"node": "diff", "resource": string(slov1alpha1.BatchCPU)}

	// 900m of system usage: 2900 is 3.3% below 3000, under the 10% threshold. The controller calculates it (the
	// gauge shows it) and does not write.
	h.writeMetric(t, "diff", prod, "900m")
	testenv.Eventually(t, "the controller calculates 2900", func() error {
		if v := h.gauge(t, "gleaner_noderesource_cpu_cores", labels); v != 2.9 {
			return fmt.Errorf("gauge = %v, want 2.9", v)
		}
		return nil
	})
	testenv.Consistently(t, time.Second, func() error {
		if n := h.node(t, "diff"); n.ResourceVersion != rv {
			return fmt.Errorf("node written for a change below the threshold: %s", n.Status.Allocatable.Name(slov1alpha1.BatchCPU, resource.DecimalSI))
		}
		exp := &slov1alpha1.NodeResourceExplanation{}
		if err := h.c.Get(context.Background(), client.ObjectKey{Name: "diff"}, exp); err != nil || exp.ResourceVersion != expRV {
			return fmt.Errorf("explanation written although the node was not (%w)", err)
		}
		return nil
	})

	// 1500m: 2300 is 23% below, above the threshold.
	h.writeMetric(t, "diff", prod, "1500m")
	h.waitBatchCPU(t, "diff", "2300")
}

func TestStaleMetricDegradesOnTheClock(t *testing.T) {
	h := start(t)
	h.makeNode(t, "stale", nil)
	expectMetricUsable(t, explanation(t, h.waitBatchCPU(t, "stale", "3000")), metav1.ConditionTrue, slov1alpha1.ReasonNodeMetricFresh, h.clock.Now())
	stamped := float64(h.clock.Now().Unix())
	stale := map[string]string{"node": "stale"}
	if v := h.gauge(t, "gleaner_noderesource_degraded", stale); v != 0 {
		t.Errorf("degraded gauge of a fresh NodeMetric = %v, want 0", v)
	}
	if v := h.gauge(t, "gleaner_noderesource_nodemetric_update_timestamp_seconds", stale); v != stamped {
		t.Errorf("NodeMetric update timestamp = %v, want %v", v, stamped)
	}
	// The reconcile that wrote 3000 has asked to come back when the NodeMetric goes stale; its delay must be in the
	// queue, measured from now, before the clock moves.
	waitIdle(t)
	// Nothing happens in the cluster; only time passes beyond degradeTimeMinutes (15).
	h.clock.Step(16 * time.Minute)
	n := h.waitBatchCPU(t, "stale", "")
	if _, ok := n.Status.Allocatable[slov1alpha1.MidCPU]; ok {
		t.Error("mid-cpu survived a stale NodeMetric")
	}
	exp := explanation(t, n)
	d := derivation(exp, slov1alpha1.BatchCPU)
	if d == nil || d.Value != nil || d.Reason != "degraded: NodeMetric stale was last updated 16m0s ago, more than degradeTimeMinutes (15m0s)" {
		t.Errorf("explanation of the degrade = %+v", d)
	}
	expectMetricUsable(t, exp, metav1.ConditionFalse, slov1alpha1.ReasonNodeMetricStale, h.clock.Now())
	// The alerts' series (config/monitoring/gleaner-rules.yaml): degraded, and the report's time unchanged.
	if v := h.gauge(t, "gleaner_noderesource_degraded", stale); v != 1 {
		t.Errorf("degraded gauge of a stale NodeMetric = %v, want 1", v)
	}
	if v := h.gauge(t, "gleaner_noderesource_nodemetric_update_timestamp_seconds", stale); v != stamped {
		t.Errorf("NodeMetric update timestamp after the degrade = %v, want %v", v, stamped)
	}
}

// TestOutOfRangeReportIsClamped: a report with a negative usage and one too large for int64 milli-units, written
// through the API server, counts as 0 and as the whole node, and `kubectl glean explain` warns of it.
func TestOutOfRangeReportIsClamped(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	prod := h.makeNode(t, "clamp", nil)
	h.waitBatchCPU(t, "clamp", "3000")

	// The prod pod reports -20 cores: 8000 - 3200 - 800 - 0 = 4000 (unclamped, -20000 of usage would publish the
	// whole 8000). It reports 1e30 bytes: the whole 16Gi, so no batch-memory (unclamped, 1e30 reads as 0 bytes).
	nm := &slov1alpha1.NodeMetric{}
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "clamp"}, nm))
	nm.Status = tu.NodeMetric("clamp").Updated(h.clock.Now()).
		NodeUsage("cpu", "2", "memory", "6Gi").SystemUsage("cpu", "800m", "memory", "1Gi").
		Pod(prod, "cpu", "-20", "memory", "1e30").ProdReclaimable("cpu", "500m", "memory", "1Gi").Obj().Status
	must(t, h.c.Status().Update(ctx, nm))

	n := h.waitBatchCPU(t, "clamp", "4000")
	explanation(t, n) // written after the node: wait for it before explain reads it
	if got := n.Status.Allocatable[slov1alpha1.BatchMemory]; got.Value() != 0 {
		t.Errorf("batch-memory = %s, want 0: the pod's 1e30 bytes count as the whole node", got.String())
	}
	out := explain(t, h, "clamp")
	for _, want := range []string{
		"warning: NodeMetric clamp reports cpu outside [0, capacity 8]; clamped pod default/clamp-prod -20 to 0",
		"warning: NodeMetric clamp reports memory outside [0, capacity 16Gi]; clamped pod default/clamp-prod 1e30 to 16Gi",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain does not say %q:\n%s", want, out)
		}
	}
}

// TestMetricAheadOfTheClock: a report stamped three minutes ahead of the manager's clock is stale, with the reason
// in `kubectl glean explain`, until the clock is within MaxClockSkew of it: two minutes later, before the forced
// update (updateTimeThresholdSeconds, 5 minutes) would look at the node anyway.
func TestMetricAheadOfTheClock(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	prod := h.makeNode(t, "ahead", nil)
	// Wait for the explanation of 3000 too: the node's first explanation (written before its report, "no usage
	// reported yet") also explains a node without batch-cpu, and must not pass for the explanation of the stamp.
	explanation(t, h.waitBatchCPU(t, "ahead", "3000"))

	stamp := h.clock.Now().Add(3 * time.Minute)
	nm := &slov1alpha1.NodeMetric{}
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "ahead"}, nm))
	nm.Status = tu.NodeMetric("ahead").Updated(stamp).
		NodeUsage("cpu", "2", "memory", "6Gi").SystemUsage("cpu", "800m", "memory", "1Gi").
		Pod(prod, "cpu", "1", "memory", "3Gi").ProdReclaimable("cpu", "500m", "memory", "1Gi").Obj().Status
	must(t, h.c.Status().Update(ctx, nm))

	// The explanation follows the node's write through its own queue: wait for it before explain reads it.
	h.waitBatchCPU(t, "ahead", "")
	want := fmt.Sprintf("degraded: NodeMetric ahead was updated at %s, 3m0s ahead of the manager's clock, more than the clock skew allowed (1m0s)",
		stamp.UTC().Format(time.RFC3339))
	testenv.Eventually(t, "node ahead explained as degraded: "+want, func() error {
		if d := derivation(explanation(t, h.node(t, "ahead")), slov1alpha1.BatchCPU); d == nil || d.Value != nil || d.Reason != want {
			return fmt.Errorf("batch-cpu explained as %+v", d)
		}
		return nil
	})
	if out := explain(t, h, "ahead"); !strings.Contains(out, "kubernetes.io/batch-cpu: not offered (plugin batch)\n  "+want) {
		t.Errorf("explain does not give the reason %q:\n%s", want, out)
	}
	// Nothing happens but time: once the stamp is within the skew, the report counts again.
	waitIdle(t)
	h.clock.Step(2*time.Minute + time.Second)
	h.waitBatchCPU(t, "ahead", "3000")
}

// explain runs `kubectl glean explain node` against the API server and returns what it prints.
func explain(t *testing.T, h *harness, node string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{Out: &out, ErrOut: &errOut}, h.clock)
	cmd.SetArgs([]string{"--kubeconfig", env.Start(t).Kubeconfig, "explain", node})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl glean explain %s: %v (%s)", node, err, errOut.String())
	}
	return out.String()
}

// TestDegradedNodeThatNeverPublishedIsExplained: a node degraded from its start, whose first NodeMetric is stamped
// ahead of the clock or that has none, has nothing to remove and so was never written; it must still have an
// explanation that says why gleaner_noderesource_degraded is 1 for it (`kubectl glean explain` once said only
// that the node had not published).
func TestDegradedNodeThatNeverPublishedIsExplained(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	h.makeNodeWithoutMetric(t, "unreported", nil)
	prod := h.makeNodeWithoutMetric(t, "early", nil)
	stamp := h.clock.Now().Add(time.Hour)
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "early"}}
	must(t, h.c.Create(ctx, nm))
	nm.Status = tu.NodeMetric("early").Updated(stamp).
		NodeUsage("cpu", "2", "memory", "6Gi").SystemUsage("cpu", "800m", "memory", "1Gi").
		Pod(prod, "cpu", "1", "memory", "3Gi").ProdReclaimable("cpu", "500m", "memory", "1Gi").Obj().Status
	must(t, h.c.Status().Update(ctx, nm))

	for node, reason := range map[string]string{
		"early": fmt.Sprintf("degraded: NodeMetric early was updated at %s, 1h0m0s ahead of the manager's clock, more than the clock skew allowed (1m0s)",
			stamp.UTC().Format(time.RFC3339)),
		"unreported": "degraded: NodeMetric unreported does not exist",
	} {
		// The node may have been explained while it had no NodeMetric yet: wait for the explanation of its report.
		testenv.Eventually(t, "node "+node+" explained as degraded: "+reason, func() error {
			d := derivation(explanation(t, h.node(t, node)), slov1alpha1.BatchCPU)
			if d == nil || d.Value != nil || d.Reason != reason {
				return fmt.Errorf("batch-cpu explained as %+v", d)
			}
			return nil
		})
		if out := explain(t, h, node); !strings.Contains(out, "kubernetes.io/batch-cpu: not offered (plugin batch)\n  "+reason) {
			t.Errorf("explain %s does not give the reason %q:\n%s", node, reason, out)
		}
		if v := h.gauge(t, "gleaner_noderesource_degraded", map[string]string{"node": node}); v != 1 {
			t.Errorf("degraded gauge of node %s = %v, want 1", node, v)
		}
	}
}

func TestDisablingColocationResetsOnlyThatNode(t *testing.T) {
	h := start(t)
	h.makeNode(t, "keep", map[string]string{"colocation": "on"})
	h.makeNode(t, "drop", map[string]string{"colocation": "gray"})
	keepRV := h.waitBatchCPU(t, "keep", "3000").ResourceVersion
	if s := explanation(t, h.waitBatchCPU(t, "drop", "3000")).Strategy; s != "nodeConfigs gray" {
		t.Errorf("strategy of node drop = %q, want the gray node config", s)
	}

	cm := &corev1.ConfigMap{}
	must(t, h.c.Get(context.Background(), configMap, cm))
	cm.Data[sloconfig.ColocationConfigKey] = colocationConfig(false)
	must(t, h.c.Update(context.Background(), cm))

	n := h.waitBatchCPU(t, "drop", "")
	if d := derivation(explanation(t, n), slov1alpha1.BatchCPU); d.Reason != "colocation is disabled for node drop" {
		t.Errorf("reason = %q", d.Reason)
	}
	testenv.Consistently(t, time.Second, func() error {
		if got := h.node(t, "keep"); got.ResourceVersion != keepRV {
			return fmt.Errorf("node keep was written although its strategy did not change")
		}
		return nil
	})
}

func TestZonesWrittenToNodeResourceTopology(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	zone := func(name string) map[string]any {
		return map[string]any{"name": name, "type": "Node", "resources": []any{
			map[string]any{"name": "cpu", "capacity": "4", "allocatable": "4", "available": "4"},
			map[string]any{"name": "memory", "capacity": "8Gi", "allocatable": "8Gi", "available": "8Gi"},
		}}
	}
	nrt := framework.NewTopologyObject()
	nrt.SetName("zoned")
	nrt.Object["zones"] = []any{zone("node-0"), zone("node-1")}
	must(t, h.c.Create(ctx, nrt))
	h.makeNode(t, "zoned", nil)
	h.waitBatchCPU(t, "zoned", "3000")

	// Each zone has half the node: 4000 - 1600 margin - (800 system + 1000 prod) / 2 = 1500.
	testenv.Eventually(t, "zone values in the NodeResourceTopology", func() error {
		got := framework.NewTopologyObject()
		if err := h.c.Get(ctx, client.ObjectKey{Name: "zoned"}, got); err != nil {
			return err
		}
		topo, err := framework.TopologyFrom(got)
		if err != nil {
			return err
		}
		for _, z := range topo.Zones {
			q, ok := z.Allocatable[slov1alpha1.BatchCPU]
			if !ok || q.Value() != 1500 {
				return fmt.Errorf("zone %s batch-cpu = %v (present %v), want 1500", z.Name, q.String(), ok)
			}
			if c := z.Allocatable[corev1.ResourceCPU]; c.Value() != 4 {
				return fmt.Errorf("zone %s lost its cpu entry: %v", z.Name, z.Allocatable)
			}
		}
		return nil
	})
	// Every reconcile of every node (this one and the other tests' nodes without one) read the NodeResourceTopology
	// from the manager's cache: not one GET reached the API server.
	if n := h.topologyGets.Load(); n != 0 {
		t.Errorf("the controller sent %d GETs of a NodeResourceTopology to the API server, want 0 (read them from the cache)", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitIdle waits until the noderesource controller has nothing queued and no reconcile in flight (its workqueue
// and worker metrics, which controller-runtime keeps in its own registry).
//
// Idle must hold for idleFor, not one look: a reconcile's own writes (the node, then its explanation) come back as
// watch events a moment later, and a reconcile they start while the test steps the clock can read the time before
// the step and queue its delay after it, to fire only a whole delay later.
func waitIdle(t *testing.T) {
	t.Helper()
	const idleFor = time.Second
	var since time.Time
	testenv.Eventually(t, "the noderesource controller idle for "+idleFor.String(), func() error {
		depth := gauge(t, ctrlmetrics.Registry, "workqueue_depth", map[string]string{"name": noderesource.Name})
		active := gauge(t, ctrlmetrics.Registry, "controller_runtime_active_workers", map[string]string{"controller": noderesource.Name})
		if depth != 0 || active != 0 {
			since = time.Time{}
			return fmt.Errorf("%v queued, %v in flight", depth, active)
		}
		if since.IsZero() {
			since = time.Now()
		}
		if idle := time.Since(since); idle < idleFor {
			return fmt.Errorf("idle for %s only", idle)
		}
		return nil
	})
}

func (h *harness) gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return gauge(t, h.metrics, name, labels)
}

// gauge returns the value of the first series of the gauge name in g whose labels include labels, or -1.
func gauge(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	if m := firstSeries(t, g, name, labels); m != nil {
		return m.GetGauge().GetValue()
	}
	return -1
}

// counter returns the value of the first series of the counter name in g whose labels include labels, or -1.
func counter(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	if m := firstSeries(t, g, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return -1
}

// firstSeries returns the first series of the metric name in g whose labels include labels, nil when none does.
func firstSeries(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue series
				}
			}
			return m
		}
	}
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCPUNormalizationAndAmplification: a node whose NodeResourceTopology describes its CPU gets the ratio of its
// model from cpu-normalization-config and the amplification ratios times that ratio, both explained; the batch
// calculation goes on counting the node's real CPUs once the webhook amplified its allocatable; turning the keys
// off removes both annotations.
func TestCPUNormalizationAndAmplification(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	const name = "normalized"
	topo := framework.NewTopologyObject()
	topo.SetName(name)
	topo.SetAnnotations(map[string]string{slov1alpha1.AnnotationCPUBasicInfo: `{"cpuModel":"Fast CPU","hyperThreadEnabled":true,"turboEnabled":true}`})
	topo.Object["zones"] = []any{}
	must(t, h.c.Create(ctx, topo))
	h.makeNode(t, name, map[string]string{"cpu-gen": "fast"})
	h.waitBatchCPU(t, name, "3000")

	setKeys := func(norm, amp string) {
		cm := &corev1.ConfigMap{}
		must(t, h.c.Get(ctx, configMap, cm))
		cm.Data[sloconfig.CPUNormalizationConfigKey] = norm
		cm.Data[sloconfig.ResourceAmplificationConfigKey] = amp
		must(t, h.c.Update(ctx, cm))
	}
	t.Cleanup(func() { setKeys("{}", "{}") })
	// Only nodes labelled cpu-gen=fast are concerned: the other tests' nodes stay as they are.
	setKeys(`{"enable": false, "nodeConfigs": [{"name": "fast", "nodeSelector": {"matchLabels": {"cpu-gen": "fast"}}, "enable": true,
		"ratioModel": {"Fast CPU": {"baseRatio": 2.0, "hyperThreadTurboEnabledRatio": 1.25}}}]}`,
		`{"nodeConfigs": [{"name": "fast", "nodeSelector": {"matchLabels": {"cpu-gen": "fast"}}, "enable": true, "resourceAmplificationRatio": {"cpu": 1.2, "memory": 1.5}}]}`)

	var n *corev1.Node
	testenv.Eventually(t, "ratio annotations on node "+name, func() error {
		n = h.node(t, name)
		got := map[string]string{
			slov1alpha1.AnnotationCPUNormalizationRatio:      n.Annotations[slov1alpha1.AnnotationCPUNormalizationRatio],
			slov1alpha1.AnnotationResourceAmplificationRatio: n.Annotations[slov1alpha1.AnnotationResourceAmplificationRatio],
		}
		want := map[string]string{
			slov1alpha1.AnnotationCPUNormalizationRatio:      "1.25",
			slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.50,"memory":1.50}`,
		}
		if d := cmp.Diff(want, got); d != "" {
			return fmt.Errorf("(-want +got):\n%s", d)
		}
		return nil
	})
	exp := explanation(t, n)
	wantExp := []slov1alpha1.AnnotationDerivation{
		{Annotation: slov1alpha1.AnnotationCPUNormalizationRatio, Plugin: "cpunormalization", Value: ptr.To("1.25"),
			Source: "cpu-normalization-config: nodeConfigs fast", Reason: "ratioModel[Fast CPU].hyperThreadTurboEnabledRatio (hyper-threading on, turbo on)"},
		{Annotation: slov1alpha1.AnnotationResourceAmplificationRatio, Plugin: "resourceamplification", Value: ptr.To(`{"cpu":1.50,"memory":1.50}`),
			Source: "resource-amplification-config: nodeConfigs fast", Reason: "cpu: 1.20 x CPU normalization ratio 1.25"},
	}
	if d := cmp.Diff(wantExp, exp.Annotations); d != "" {
		t.Errorf("explained annotations (-want +got):\n%s", d)
	}
	if out := explain(t, h, name); !strings.Contains(out, "node.koordinator.sh/cpu-normalization-ratio = 1.25") ||
		!strings.Contains(out, "cpu-normalization-config: nodeConfigs fast") {
		t.Errorf("kubectl glean explain does not show the ratio and its source:\n%s", out)
	}

	// What the node webhook does (envtest runs no webhook) after the kubelet reserved 2 of the 8 cores: allocatable
	// 6 x 1.5 = 9 cores, the kubelet's 6 saved. The batch calculation counts the kubelet's reservation of the real
	// cores: 8000 - 3200 margin - 2000 reserved - 1000 prod = 1800. Taken from the amplified 9 cores, the
	// reservation would vanish (8 - 9 < 0) and batch-cpu stay 3000.
	n = h.node(t, name)
	amplified := n.DeepCopy()
	amplified.Annotations[slov1alpha1.AnnotationRawAllocatable] = `{"cpu":"6","memory":"16Gi"}`
	amplified.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("9")
	amplified.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("24Gi")
	must(t, h.c.Status().Patch(ctx, amplified, client.MergeFrom(n)))
	h.waitBatchCPU(t, name, "1800")

	setKeys(`{}`, `{}`)
	testenv.Eventually(t, "ratio annotations removed from node "+name, func() error {
		n := h.node(t, name)
		for _, k := range []string{slov1alpha1.AnnotationCPUNormalizationRatio, slov1alpha1.AnnotationResourceAmplificationRatio} {
			if v, ok := n.Annotations[k]; ok {
				return fmt.Errorf("%s still %s", k, v)
			}
		}
		return nil
	})
}

// waitAllocatable waits until the node publishes the resource r = want.
func (h *harness) waitAllocatable(t *testing.T, name string, r corev1.ResourceName, want string) *corev1.Node {
	t.Helper()
	var n *corev1.Node
	testenv.Eventually(t, fmt.Sprintf("node %s publishes %s %s", name, r, want), func() error {
		n = h.node(t, name)
		got, ok := n.Status.Allocatable[r]
		switch {
		case !ok:
			return fmt.Errorf("no %s", r)
		case got.Cmp(resource.MustParse(want)) != 0:
			return fmt.Errorf("%s = %s, want %s", r, got.String(), want)
		}
		return nil
	})
	return n
}

// TestMemoryPressureHoldsBatchMemory: the agent reports memory pressure in the NodeMetric before it evicts a batch
// pod for the node's memory, listing the pod. The node's batch-memory drops at once to what the batch pods it keeps
// request, though by less than resourceDiffThreshold, so that the evicted pod's replacement finds no room; it stays
// there for as long as the NodeMetric reports the pressure, and comes back at once when the agent's hold is over.
func TestMemoryPressureHoldsBatchMemory(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	const name = "mempress"
	prod := h.makeNodeWithoutMetric(t, name, nil)
	uids := map[string]string{}
	for _, p := range []struct{ name, memory string }{{"holder", "512Mi"}, {"other", "6Gi"}} {
		pod := tu.Pod(name+"-"+p.name).Node(name).PriorityClass("gleaner-batch").Requests(string(slov1alpha1.BatchMemory), p.memory).Obj()
		pod.UID = ""
		must(t, h.c.Create(ctx, pod))
		uids[p.name] = string(pod.UID)
	}
	// No prod memory is reclaimable: mid-memory is 0 with or without memory pressure, and only batch-memory moves
	// (a mid-memory that moved would have the node written anyway).
	report := func(m *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric {
		m = tu.AsPodUsages(m)
		m.Status.ProdReclaimableMetric.Resource[corev1.ResourceMemory] = resource.MustParse("0")
		return m
	}
	h.writeMetricAs(t, name, prod, "800m", report)
	// 16Gi x 65% - 1Gi system - 3Gi prod = 6553.6Mi, lifted to the 6656Mi the two batch pods request.
	h.waitAllocatable(t, name, slov1alpha1.BatchMemory, "6656Mi")
	h.waitAllocatable(t, name, slov1alpha1.MidMemory, "0")
	waitIdle(t)

	since := h.clock.Now()
	underPressure := func(m *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric {
		m = report(m)
		m.Status.MemoryPressure = &slov1alpha1.MemoryPressure{Since: metav1.NewTime(since), LastPressureTime: metav1.NewTime(h.clock.Now()),
			HoldSeconds: 300, EvictedPods: []string{uids["holder"]}}
		return m
	}
	h.writeMetricAs(t, name, prod, "800m", underPressure)
	// 6Gi, what "other" requests: 7.7% below 6656Mi, under the 10% threshold, written all the same. The holder's
	// replacement (512Mi) does not fit: the pods that stay request all of it.
	n := h.waitAllocatable(t, name, slov1alpha1.BatchMemory, "6Gi")
	d := derivation(explanation(t, n), slov1alpha1.BatchMemory)
	if detail := termDetail(d, "batchKept"); !strings.Contains(detail, "less the 1 the agent lists as evicted") {
		t.Errorf("the explanation does not show what is kept: batchKept %q, formula %q", detail, d.Formula)
	}
	if got := n.Status.Allocatable[slov1alpha1.BatchCPU]; got.Value() != 3000 {
		t.Errorf("batch-cpu = %s under memory pressure, want 3000 as before", got.String())
	}

	// Four minutes on the pressure goes on: the agent's next report still says so, and batch-memory stays.
	h.clock.Step(4 * time.Minute)
	h.writeMetricAs(t, name, prod, "800m", underPressure)
	waitIdle(t)
	testenv.Consistently(t, time.Second, func() error {
		if got := h.node(t, name).Status.Allocatable[slov1alpha1.BatchMemory]; got.Cmp(resource.MustParse("6Gi")) != 0 {
			return fmt.Errorf("batch-memory = %s while the NodeMetric reports memory pressure", got.String())
		}
		return nil
	})

	// The hold is over: the agent removes the field, and batch-memory comes back at once, though only by 8%.
	h.writeMetricAs(t, name, prod, "800m", report)
	h.waitAllocatable(t, name, slov1alpha1.BatchMemory, "6656Mi")
}
