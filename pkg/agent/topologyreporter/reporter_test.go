package topologyreporter

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy/podresourcestest"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/plugins/batch"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// counting is an API client that counts the reporter's reads and writes of NodeResourceTopology objects.
type counting struct {
	client.Client
	gets, writes atomic.Int32
}

func newCounting(t *testing.T, e *testenv.Env) *counting {
	t.Helper()
	// A client of its own, with its own REST mapper, as the agent has: it must notice a CRD installed after it
	// first looked.
	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{}
	c.Client = interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			c.gets.Add(1)
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			c.writes.Add(1)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			c.writes.Add(1)
			return cl.Update(ctx, obj, opts...)
		},
	})
	return c
}

// hostTwo is a Node for the testdata/two host: 10 CPUs, 16Gi, of which the kubelet reserves 1 CPU and 1Gi.
func hostTwo(t *testing.T, e *testenv.Env, name string) *corev1.Node {
	return e.CreateNode(t, testutil.Node(name).Capacity("cpu", "10", "memory", "16Gi").Allocatable("cpu", "9", "memory", "15Gi").Obj())
}

func get(t *testing.T, e *testenv.Env, name string) (*unstructured.Unstructured, []nrt.Zone) {
	t.Helper()
	u := nrt.New()
	if err := e.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatalf("getting NodeResourceTopology %s: %v", name, err)
	}
	obj, err := nrt.Decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return u, obj.Zones
}

func reports(m *metrics.Metrics, result string) int {
	return int(promtestutil.ToFloat64(m.TopologyReports.WithLabelValues(result)))
}

// TestPublish runs the reporter against a real API server: first without the NodeResourceTopology CRD (it says so
// once, keeps running and looks again every Resync), then with the CRD installed later (it creates the object), and
// then round by round: nothing sent when nothing changed, the manager's zone entries kept, an update when the
// Node's allocatable or the pods' requests change.
func TestPublish(t *testing.T) {
	e := env.Start(t)
	const name = "nrt-two"
	node := hostTwo(t, e, name)
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": nrt.GVK.GroupVersion().String(), "kind": nrt.GVK.Kind, "metadata": map[string]any{"name": name}}})
	})
	store := statesinformer.NewStore()
	store.SetNode(node.DeepCopy())
	c := newCounting(t, e)
	clk := clocktesting.NewFakeClock(testNow)
	m := metrics.New()
	r := New(c, store, "testdata/proc", "testdata/two", clk, m, name, DefaultOptions())

	startWithoutCRD(t, e, r, clk, m, c)

	u, zones := get(t, e, name)
	want := []nrt.Zone{
		zone("node-0", "6", "5400m", "5400m", "12Gi", "11520Mi", "11520Mi"),
		zone("node-1", "4", "3600m", "3600m", "4Gi", "3840Mi", "3840Mi"),
	}
	if diff := cmp.Diff(want, zones, sameQuantity); diff != "" {
		t.Errorf("published zones (-want +got):\n%s", diff)
	}
	if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != node.UID {
		t.Errorf("owner references = %+v, want the Node %s", refs, node.UID)
	}

	// The CPU as gleaner-manager's CPU normalization reads it: CPU 0 has a sibling in the fixture (0-1), and it
	// has no intel_pstate files.
	wantCPU := `{"cpuModel":"Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz","hyperThreadEnabled":true,"vendorID":"GenuineIntel"}`
	if got := u.GetAnnotations()[slov1alpha1.AnnotationCPUBasicInfo]; got != wantCPU {
		t.Errorf("annotation %s = %q, want %q", slov1alpha1.AnnotationCPUBasicInfo, got, wantCPU)
	}

	checkManagerSplit(t, u, node)

	checkRounds(t, e, r, c, clk, store, node)
}

// TestPublishKubeletManagers: the kubelet's CPU and memory manager policies go on the object, a change of them is
// published in the next round, and a kubelet that cannot be asked leaves the last published policies in place
// while the zones are still published.
func TestPublishKubeletManagers(t *testing.T) {
	e := env.Start(t)
	e.InstallTopologyCRD(t)
	const name = "nrt-kubelet"
	store := statesinformer.NewStore()
	store.SetNode(hostTwo(t, e, name))
	c := newCounting(t, e)
	ctx := context.Background()
	report := func(socket string) map[string]string {
		t.Helper()
		opts := DefaultOptions()
		opts.PodResourcesSocket = socket
		r := New(c, store, "testdata/proc", "testdata/two", clocktesting.NewFakeClock(testNow), metrics.New(), name, opts)
		if res, err := r.Report(ctx); err != nil || res == ReportError {
			t.Fatalf("report: %s, %v", res, err)
		}
		u, _ := get(t, e, name)
		return u.GetAnnotations()
	}
	expect := func(got map[string]string, cpu, memory string) {
		t.Helper()
		for key, want := range map[string]string{slov1alpha1.AnnotationKubeletCPUManagerPolicy: cpu, slov1alpha1.AnnotationKubeletMemoryManagerPolicy: memory} {
			if got[key] != want {
				t.Errorf("annotation %s = %q, want %q", key, got[key], want)
			}
		}
	}
	expect(report(podresourcestest.Serve(t, podresourcestest.Static())), `{"policy":"static"}`, `{"policy":"Static"}`)
	expect(report(podresourcestest.Serve(t, podresourcestest.None())), `{"policy":"none"}`, `{"policy":"None"}`)
	got := report(podresourcestest.Serve(t, nil))
	expect(got, `{"policy":"none"}`, `{"policy":"None"}`)
	if got[slov1alpha1.AnnotationCPUBasicInfo] == "" {
		t.Errorf("the CPU description went with the kubelet's answer: %v", got)
	}
}

// TestMalformedHost: a sysfs tree that cannot be read is a clear error, and nothing is written.
func TestMalformedHost(t *testing.T) {
	e := env.Start(t)
	e.InstallTopologyCRD(t)
	const name = "nrt-bad"
	store := statesinformer.NewStore()
	store.SetNode(hostTwo(t, e, name))
	c := newCounting(t, e)
	m := metrics.New()
	r := New(c, store, "testdata/proc", "testdata/badcpulist", clocktesting.NewFakeClock(testNow), m, name, DefaultOptions())
	res, err := r.Report(context.Background())
	if res != ReportError || err == nil || !strings.Contains(err.Error(), "reading the NUMA topology under testdata/badcpulist") ||
		!strings.Contains(err.Error(), "CPUs of NUMA node 1") {
		t.Fatalf("report on a malformed host: %s, %v; want %s with an error naming the topology and node 1's CPUs", res, err, ReportError)
	}
	if n := c.writes.Load(); n != 0 {
		t.Errorf("%d writes, want none", n)
	}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Name: name}, nrt.New()); !apierrors.IsNotFound(err) {
		t.Errorf("NodeResourceTopology %s: got %v, want not found", name, err)
	}
	if n := reports(m, ReportError); n != 1 {
		t.Errorf("error reports = %d, want 1", n)
	}
}

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func resourceOf(zones []nrt.Zone, zone, name string) (nrt.ResourceInfo, bool) {
	for _, z := range zones {
		for _, r := range z.Resources {
			if z.Name == zone && r.Name == name {
				return r, true
			}
		}
	}
	return nrt.ResourceInfo{}, false
}

// writeManagerZones writes zone resources the way gleaner-manager's batch plugin does.
func writeManagerZones(t *testing.T, e *testenv.Env, name string, zones map[string]corev1.ResourceList) {
	t.Helper()
	u, _ := get(t, e, name)
	if err := framework.UpdateTopologyZones(context.Background(), e.Client, u, zones, "kubernetes.io/batch-cpu"); err != nil {
		t.Fatal(err)
	}
}

// checkManagerSplit feeds the object the agent wrote to the manager's zone split (framework.TopologyFrom and the
// batch plugin) for the testdata/two node, 10 cores of which the kubelet reserves 1, with 500m of system usage and
// no pods: batch-cpu = 10000 - 40% margin - 1000 reserved = 5000, and per zone the same with the zone's capacity
// and its share of the reservation: 6000 - 2400 - 600 = 3000 and 4000 - 1600 - 400 = 2000.
func checkManagerSplit(t *testing.T, u *unstructured.Unstructured, node *corev1.Node) {
	t.Helper()
	topo, err := framework.TopologyFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	s := sloconfig.DefaultColocationStrategy()
	s.Enable = ptr.To(true)
	in := &framework.Input{
		Node: node, Topology: topo, Strategy: &s, Now: testNow,
		Metric: testutil.NodeMetric(node.Name).Updated(testNow.Add(-time.Minute)).
			NodeUsage("cpu", "1", "memory", "2Gi").SystemUsage("cpu", "500m", "memory", "512Mi").Obj(),
	}
	items, err := batch.New().Calculate(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Name != slov1alpha1.BatchCPU {
			continue
		}
		got := map[string]int64{}
		for z, q := range it.ZoneQuantity {
			got[z] = q.Value()
		}
		if diff := cmp.Diff(map[string]int64{"node-0": 3000, "node-1": 2000}, got); diff != "" || it.Quantity.Value() != 5000 {
			t.Errorf("the manager's batch-cpu from the agent's zones: node %s (want 5000), zones (-want +got):\n%s", it.Quantity, diff)
		}
		return
	}
	t.Errorf("the batch plugin gave no %s: %+v", slov1alpha1.BatchCPU, items)
}

// startWithoutCRD runs r.Start in a cluster without the NodeResourceTopology CRD: the reporter says so once, checks
// again every Resync without writing, and creates the object at the first look after the CRD is installed.
func startWithoutCRD(t *testing.T, e *testenv.Env, r *Reporter, clk *clocktesting.FakeClock, m *metrics.Metrics, c *counting) {
	t.Helper()
	var log qosmanagertest.Log
	runCtx, stop := context.WithCancel(klog.NewContext(context.Background(), log.Logger()))
	done := make(chan struct{})
	var startErr error
	go func() { startErr = r.Start(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	waitFor(t, "the first report", func() bool { return reports(m, ReportNoCRD) == 1 && clk.HasWaiters() })
	if n := c.writes.Load(); n != 0 {
		t.Errorf("%d writes without the CRD, want none", n)
	}
	// Not every Interval: only once Resync has passed.
	clk.Step(DefaultOptions().Interval)
	waitFor(t, "the reporter waiting", clk.HasWaiters)
	clk.Step(Resync - DefaultOptions().Interval)
	waitFor(t, "the second look for the CRD", func() bool { return reports(m, ReportNoCRD) == 2 && clk.HasWaiters() })
	if n := log.Count("no NodeResourceTopology CRD"); n != 1 {
		t.Errorf("the missing CRD was logged %d times in two rounds, want once:\n%s", n, log.String())
	}

	// An operator installs the CRD: the next look creates the object.
	e.InstallTopologyCRD(t)
	clk.Step(Resync)
	waitFor(t, "the object created once the CRD exists", func() bool { return reports(m, ReportWritten) == 1 && clk.HasWaiters() })
	if n := log.Count("publishing the NodeResourceTopology again"); n != 1 {
		t.Errorf("the return of the CRD was logged %d times, want once:\n%s", n, log.String())
	}
	stop()
	<-done
	if startErr != nil {
		t.Errorf("Start returned %v, want nil", startErr)
	}
}

// checkRounds reports round by round after the object exists: nothing sent when nothing changed, the manager's zone
// entries kept, an update when the Node's allocatable or the pods' requests change.
func checkRounds(t *testing.T, e *testenv.Env, r *Reporter, c *counting, clk *clocktesting.FakeClock, store *statesinformer.Store, node *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	name := node.Name
	// Nothing changed: nothing is read or written until Resync has passed, and then only read.
	gets, writes := c.gets.Load(), c.writes.Load()
	if res, err := r.Report(ctx); err != nil || res != ReportUnchanged {
		t.Fatalf("report with nothing changed: %s, %v; want %s", res, err, ReportUnchanged)
	}
	if c.gets.Load() != gets || c.writes.Load() != writes {
		t.Errorf("a report with nothing changed sent %d reads and %d writes, want none", c.gets.Load()-gets, c.writes.Load()-writes)
	}

	// The manager writes its zone values (as the batch plugin's PreUpdate does): the agent keeps them.
	batchZones := map[string]corev1.ResourceList{"node-0": {"kubernetes.io/batch-cpu": mustQuantity("3000")}, "node-1": {"kubernetes.io/batch-cpu": mustQuantity("2000")}}
	writeManagerZones(t, e, name, batchZones)
	gets = c.gets.Load()
	clk.Step(Resync)
	if res, err := r.Report(ctx); err != nil || res != ReportUnchanged {
		t.Fatalf("report after the manager's write: %s, %v; want %s", res, err, ReportUnchanged)
	}
	if c.gets.Load() == gets || c.writes.Load() != writes {
		t.Errorf("after Resync a report read %d times and wrote %d times, want a read and no write", c.gets.Load()-gets, c.writes.Load()-writes)
	}

	// The kubelet reserves one more CPU: the zones' allocatable follows at once, the manager's entries stay.
	node.Status.Allocatable["cpu"] = mustQuantity("8")
	store.SetNode(node.DeepCopy())
	if res, err := r.Report(ctx); err != nil || res != ReportWritten {
		t.Fatalf("report after allocatable changed: %s, %v; want %s", res, err, ReportWritten)
	}
	_, zones := get(t, e, name)
	for _, w := range []struct {
		zone, resource, allocatable string
	}{
		{"node-0", "cpu", "4800m"}, {"node-1", "cpu", "3200m"}, // 8 cores split 6:4
		{"node-0", "kubernetes.io/batch-cpu", "3000"}, {"node-1", "kubernetes.io/batch-cpu", "2000"},
	} {
		if got, ok := resourceOf(zones, w.zone, w.resource); !ok || got.Allocatable.Cmp(mustQuantity(w.allocatable)) != 0 {
			t.Errorf("zone %s %s allocatable = %s (present %v), want %s", w.zone, w.resource, got.Allocatable.String(), ok, w.allocatable)
		}
	}

	// gleaner-manager's node webhook amplifies cpu 1.5 times: the zones still split the 8 real cores.
	node.Annotations = map[string]string{slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.50}`, slov1alpha1.AnnotationRawAllocatable: `{"cpu":"8"}`}
	node.Status.Allocatable["cpu"] = mustQuantity("12")
	store.SetNode(node.DeepCopy())
	if res, err := r.Report(ctx); err != nil || res != ReportUnchanged {
		t.Fatalf("report after amplification: %s, %v; want %s (the raw allocatable did not change)", res, err, ReportUnchanged)
	}

	// A pod requests 2 CPUs and 4Gi: available drops by each zone's share.
	store.SetPod(testutil.Pod("p").Node(name).Requests("cpu", "2", "memory", "4Gi").Obj())
	if res, err := r.Report(ctx); err != nil || res != ReportWritten {
		t.Fatalf("report after a pod came: %s, %v; want %s", res, err, ReportWritten)
	}
	_, zones = get(t, e, name)
	if got, _ := resourceOf(zones, "node-0", "cpu"); got.Available.Cmp(mustQuantity("3600m")) != 0 {
		t.Errorf("node-0 cpu available = %s, want 4800m - 6/10 of 2 = 3600m", got.Available.String())
	}
	if got, _ := resourceOf(zones, "node-1", "memory"); got.Available.Cmp(mustQuantity("2816Mi")) != 0 {
		t.Errorf("node-1 memory available = %s, want 3840Mi - 4/16 of 4Gi = 2816Mi", got.Available.String())
	}
}
