package nodeslo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodemetric"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeslo"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// cluster is one test's view of the API server: its own ConfigMap namespace and nodes, with the sloconfig, nodeslo
// and nodemetric controllers running.
type cluster struct {
	t     testing.TB
	e     *testenv.Env
	store *sloconfig.Store
	cm    types.NamespacedName

	mu     sync.Mutex
	writes map[string]int // "NodeSLO name" -> create/update/patch requests by the controllers
}

func start(t testing.TB, customize ...func(*ctrl.Options)) *cluster {
	t.Helper()
	e := env.Start(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "slo-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, e: e, store: sloconfig.NewStore(), cm: types.NamespacedName{Namespace: ns.Name, Name: "slo-controller-config"},
		writes: map[string]int{}}
	e.StartManager(t, func(mgr ctrl.Manager) error {
		for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
			sloconfigmap.New(c.store, c.cm, nil), nodeslo.New(c.store), nodemetric.New(c.store),
		} {
			if err := s.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	}, append([]func(*ctrl.Options){c.countWrites}, customize...)...)
	return c
}

// countWrites makes the manager's client count the requests that write NodeSLOs and NodeMetrics, so a test sees
// even a patch that changes nothing (which leaves the resource version alone).
func (c *cluster) countWrites(o *ctrl.Options) {
	o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		inner, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		count := func(obj client.Object) {
			kind := ""
			switch obj.(type) {
			case *slov1alpha1.NodeSLO:
				kind = "NodeSLO "
			case *slov1alpha1.NodeMetric:
				kind = "NodeMetric "
			default:
				return
			}
			c.mu.Lock()
			c.writes[kind+obj.GetName()]++
			c.mu.Unlock()
		}
		return interceptor.NewClient(inner, interceptor.Funcs{
			Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count(obj)
				return cl.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count(obj)
				return cl.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				count(obj)
				return cl.Patch(ctx, obj, patch, opts...)
			},
		}), nil
	}
}

// takeWrites returns the objects written since the last call, with the number of write requests each.
func (c *cluster) takeWrites() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.writes
	c.writes = map[string]int{}
	return out
}

// node creates a node that is deleted when the test ends.
func (c *cluster) node(name string, labels ...string) *corev1.Node {
	c.t.Helper()
	b := testutil.Node(name)
	for i := 0; i+1 < len(labels); i += 2 {
		b.Label(labels[i], labels[i+1])
	}
	n := b.Obj()
	if err := c.e.Client.Create(context.Background(), n); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = c.e.Client.Delete(context.Background(), n) })
	return n
}

// apply creates or replaces the ConfigMap's data.
func (c *cluster) apply(data map[string]string) {
	c.t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	err := c.e.Client.Get(ctx, c.cm, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.cm.Namespace, Name: c.cm.Name}, Data: data}
		err = c.e.Client.Create(ctx, cm)
	case err == nil:
		cm.Data = data
		err = c.e.Client.Update(ctx, cm)
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) nodeSLO(name string) (*slov1alpha1.NodeSLO, error) {
	slo := &slov1alpha1.NodeSLO{}
	return slo, c.e.Client.Get(context.Background(), types.NamespacedName{Name: name}, slo)
}

func (c *cluster) nodeMetric(name string) (*slov1alpha1.NodeMetric, error) {
	m := &slov1alpha1.NodeMetric{}
	return m, c.e.Client.Get(context.Background(), types.NamespacedName{Name: name}, m)
}

// waitSpec waits until the node's NodeSLO spec satisfies check.
func (c *cluster) waitSpec(node string, check func(*slov1alpha1.NodeSLOSpec) error) *slov1alpha1.NodeSLO {
	c.t.Helper()
	var slo *slov1alpha1.NodeSLO
	testenv.Eventually(c.t, "NodeSLO "+node, func() error {
		var err error
		if slo, err = c.nodeSLO(node); err != nil {
			return err
		}
		return check(&slo.Spec)
	})
	return slo
}

// kubectlSpec returns the node's NodeSLO spec as `kubectl get -o json` prints it: what a user sees.
func (c *cluster) kubectlSpec(node string) map[string]any {
	c.t.Helper()
	out, err := c.e.Kubectl("get", "nodeslo", node, "-o", "json").Output()
	if err != nil {
		c.t.Fatalf("kubectl get nodeslo %s: %v", node, err)
	}
	var obj struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal(out, &obj); err != nil {
		c.t.Fatal(err)
	}
	return obj.Spec
}

func seedValue(t *testing.T, example, key string) string {
	t.Helper()
	b, err := os.ReadFile("../../sloconfig/testdata/seed002/" + example + "/" + key + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// specOfSeedYAML returns the spec of a NodeSLO as Koordinator's documentation prints it.
func specOfSeedYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	var obj struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Spec
}

// TestSeed002NodeSLO applies Koordinator's example ConfigMaps (testdata/seed002) as they are and compares the
// NodeSLO with the one its documentation shows, as kubectl prints it.
func TestSeed002NodeSLO(t *testing.T) {
	c := start(t)
	c.node("test-node")

	// Koordinator's first example NodeSLO, "parsed from the resource-threshold-config data" (it does not print that
	// data; this is the value that says exactly what the NodeSLO shows).
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true,
		"cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cpuset", "memoryEvictThresholdPercent": 70}}`})
	want := specOfSeedYAML(t, `
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeSLO
metadata:
  name: test-node
spec:
  cpuBurstStrategy: {}
  extensions: {}
  resourceQOSStrategy: {}
  systemStrategy: {}
  # parsed from the `+"`resource-threshold-config`"+` data
  resourceUsedThresholdWithBE:
    cpuSuppressPolicy: cpuset
    cpuSuppressThresholdPercent: 65
    enable: true
    memoryEvictThresholdPercent: 70
`)
	c.waitSpec("test-node", func(s *slov1alpha1.NodeSLOSpec) error {
		if ptr.Deref(s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, 0) != 65 {
			return fmt.Errorf("not yet: %+v", s.ResourceUsedThresholdWithBE)
		}
		return nil
	})
	if d := cmp.Diff(want, c.kubectlSpec("test-node")); d != "" {
		t.Errorf("NodeSLO differs from Koordinator's example (-example +gleaner):\n%s", d)
	}

	// The quick start: the ConfigMap as `kubectl get` shows it, then the edit, then the NodeSLO it shows.
	c.apply(map[string]string{
		sloconfig.ColocationConfigKey:        seedValue(t, "quickstart-get", sloconfig.ColocationConfigKey),
		sloconfig.ResourceThresholdConfigKey: seedValue(t, "quickstart-get", sloconfig.ResourceThresholdConfigKey),
	})
	c.waitSpec("test-node", func(s *slov1alpha1.NodeSLOSpec) error {
		if !equality.Semantic.DeepEqual(s.ResourceUsedThresholdWithBE, &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(false)}) {
			return fmt.Errorf("not yet: %+v", s.ResourceUsedThresholdWithBE)
		}
		return nil
	})
	c.apply(map[string]string{
		sloconfig.ColocationConfigKey:        seedValue(t, "quickstart-get", sloconfig.ColocationConfigKey),
		sloconfig.ResourceThresholdConfigKey: seedValue(t, "quickstart-edit", sloconfig.ResourceThresholdConfigKey),
	})
	want = specOfSeedYAML(t, `
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeSLO
metadata:
  name: test-node
spec:
  # ...
  extensions: {}
  resourceUsedThresholdWithBE:
    cpuSuppressPolicy: cpuset
    cpuSuppressThresholdPercent: 60
    enable: true
    memoryEvictThresholdPercent: 60
`)
	// "# ..." stands for the strategies the example leaves out; nothing configures them, so they are empty.
	for _, k := range []string{"cpuBurstStrategy", "resourceQOSStrategy", "systemStrategy"} {
		want[k] = map[string]any{}
	}
	c.waitSpec("test-node", func(s *slov1alpha1.NodeSLOSpec) error {
		if ptr.Deref(s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, 0) != 60 {
			return fmt.Errorf("not yet: %+v", s.ResourceUsedThresholdWithBE)
		}
		return nil
	})
	if d := cmp.Diff(want, c.kubectlSpec("test-node")); d != "" {
		t.Errorf("NodeSLO differs from Koordinator's quick start (-example +gleaner):\n%s", d)
	}

	// The CPU-eviction manual's example, with its "CPUEvictTimeWindowSeconds".
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: seedValue(t, "cpu-evict", sloconfig.ResourceThresholdConfigKey)})
	c.waitSpec("test-node", func(s *slov1alpha1.NodeSLOSpec) error {
		want := &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true), CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60),
			CPUEvictBESatisfactionUpperPercent: ptr.To[int64](80), CPUEvictBEUsageThresholdPercent: ptr.To[int64](90), CPUEvictTimeWindowSeconds: ptr.To[int64](60)}
		if d := cmp.Diff(want, s.ResourceUsedThresholdWithBE); d != "" {
			return fmt.Errorf("(-want +got):\n%s", d)
		}
		return nil
	})
}

// TestSelectorsAndAffectedNodesOnly: node strategies pick the right nodes, and each config change rewrites exactly
// the NodeSLOs and NodeMetrics whose content changes.
func TestSelectorsAndAffectedNodesOnly(t *testing.T) {
	c := start(t)
	nodes := []string{"sel-a1", "sel-a2", "sel-b1", "sel-plain"}
	c.node("sel-a1", "pool", "a")
	c.node("sel-a2", "pool", "a", "kubernetes.io/kernel", "anolis")
	c.node("sel-b1", "pool", "b")
	c.node("sel-plain")
	threshold := func(aPercent int) string {
		return fmt.Sprintf(`{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 70}, "nodeStrategies": [
			{"name": "pool-a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuSuppressThresholdPercent": %d},
			{"name": "b-or-anolis", "nodeSelector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]},
			 "cpuSuppressThresholdPercent": 40}]}`, aPercent)
	}
	colocation := func(bInterval int) string {
		return fmt.Sprintf(`{"enable": true, "nodeConfigs": [
			{"name": "pool-b", "nodeSelector": {"matchLabels": {"pool": "b"}}, "metricReportIntervalSeconds": %d}]}`, bInterval)
	}
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: threshold(50), sloconfig.ColocationConfigKey: colocation(30)})
	want := map[string]int64{"sel-a1": 50, "sel-a2": 50, "sel-b1": 40, "sel-plain": 70}
	wantInterval := map[string]int64{"sel-a1": 60, "sel-a2": 60, "sel-b1": 30, "sel-plain": 60}
	versions := c.waitAll(nodes, want, wantInterval)
	c.takeWrites()

	// Only pool a's threshold changes: sel-a1 and sel-a2's NodeSLOs, nothing else.
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: threshold(45), sloconfig.ColocationConfigKey: colocation(30)})
	want["sel-a1"], want["sel-a2"] = 45, 45
	versions = c.expectWrites(nodes, want, wantInterval, versions, []string{"NodeSLO sel-a1", "NodeSLO sel-a2"})

	// Only pool b's report interval changes: sel-b1's NodeMetric, nothing else.
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: threshold(45), sloconfig.ColocationConfigKey: colocation(20)})
	wantInterval["sel-b1"] = 20
	versions = c.expectWrites(nodes, want, wantInterval, versions, []string{"NodeMetric sel-b1"})

	// A change that alters no node's strategy (reformatting, a colocation field NodeMetric does not carry) and a
	// rejected edit write nothing.
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: "\n" + threshold(45),
		sloconfig.ColocationConfigKey: strings.Replace(colocation(20), `"enable": true`, `"enable": true, "cpuReclaimThresholdPercent": 50`, 1)})
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": }`,
		sloconfig.ColocationConfigKey: strings.Replace(colocation(20), `"enable": true`, `"enable": true, "cpuReclaimThresholdPercent": 50`, 1)})
	testenv.Eventually(t, "the rejected edit is loaded", func() error {
		if c.store.Current().Key(sloconfig.ResourceThresholdConfigKey).Err == nil {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	c.expectWrites(nodes, want, wantInterval, versions, nil)

	// A label change moves a node to another strategy.
	n := &corev1.Node{}
	if err := c.e.Client.Get(context.Background(), types.NamespacedName{Name: "sel-plain"}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{"pool": "b"}
	if err := c.e.Client.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	c.waitSpec("sel-plain", func(s *slov1alpha1.NodeSLOSpec) error {
		if got := *s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent; got != 40 {
			return fmt.Errorf("cpuSuppressThresholdPercent %d, want 40", got)
		}
		return nil
	})
}

// waitAll waits until every node's NodeSLO threshold and NodeMetric interval are as wanted and returns the
// objects' resource versions.
func (c *cluster) waitAll(nodes []string, threshold, interval map[string]int64) map[string]string {
	c.t.Helper()
	versions := map[string]string{}
	for _, n := range nodes {
		slo := c.waitSpec(n, func(s *slov1alpha1.NodeSLOSpec) error {
			if got := ptr.Deref(s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, 0); got != threshold[n] {
				return fmt.Errorf("cpuSuppressThresholdPercent %d, want %d", got, threshold[n])
			}
			return nil
		})
		versions["NodeSLO "+n] = slo.ResourceVersion
		testenv.Eventually(c.t, "NodeMetric "+n, func() error {
			m, err := c.nodeMetric(n)
			if err != nil {
				return err
			}
			if got := *m.Spec.CollectPolicy.ReportIntervalSeconds; got != interval[n] {
				return fmt.Errorf("reportIntervalSeconds %d, want %d", got, interval[n])
			}
			versions["NodeMetric "+n] = m.ResourceVersion
			return nil
		})
	}
	return versions
}

// expectWrites waits for the wanted state, then checks that exactly the objects in written changed since before.
func (c *cluster) expectWrites(nodes []string, threshold, interval map[string]int64, before map[string]string, written []string) map[string]string {
	c.t.Helper()
	c.waitAll(nodes, threshold, interval)
	// Writes the config change could still cause would come within this time; none may come.
	time.Sleep(time.Second)
	after := c.waitAll(nodes, threshold, interval)
	var got []string
	for _, n := range nodes {
		for _, kind := range []string{"NodeSLO ", "NodeMetric "} {
			if before[kind+n] != after[kind+n] {
				got = append(got, kind+n)
			}
		}
	}
	if d := cmp.Diff(written, got); d != "" {
		c.t.Errorf("objects changed (-want +got):\n%s", d)
	}
	wantRequests := map[string]int{}
	for _, w := range written {
		wantRequests[w] = 1
	}
	if d := cmp.Diff(wantRequests, c.takeWrites()); d != "" {
		c.t.Errorf("write requests per object (-want +got):\n%s", d)
	}
	return after
}

// TestNodesAddedAndRemoved: a node gets its NodeSLO and NodeMetric, owned by it; a node deleted loses them.
func TestNodesAddedAndRemoved(t *testing.T) {
	c := start(t)
	c.apply(map[string]string{sloconfig.SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 150}}`})
	n := c.node("life-1")
	slo := c.waitSpec("life-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if ptr.Deref(s.SystemStrategy.MinFreeKbytesFactor, 0) != 150 {
			return fmt.Errorf("not yet: %+v", s.SystemStrategy)
		}
		return nil
	})
	var m *slov1alpha1.NodeMetric
	testenv.Eventually(t, "NodeMetric life-1", func() (err error) { m, err = c.nodeMetric("life-1"); return err })
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "life-1", UID: n.UID, Controller: ptr.To(true)}}
	if d := cmp.Diff(wantOwner, slo.OwnerReferences); d != "" {
		t.Errorf("NodeSLO owner (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantOwner, m.OwnerReferences); d != "" {
		t.Errorf("NodeMetric owner (-want +got):\n%s", d)
	}
	wantPolicy := &slov1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](300), ReportIntervalSeconds: ptr.To[int64](60),
		NodeAggregatePolicy: sloconfig.DefaultColocationStrategy().MetricAggregatePolicy}
	if d := cmp.Diff(wantPolicy, m.Spec.CollectPolicy); d != "" {
		t.Errorf("NodeMetric collect policy (-want +got):\n%s", d)
	}

	if err := c.e.Client.Delete(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "NodeSLO and NodeMetric of the deleted node gone", func() error {
		if _, err := c.nodeSLO("life-1"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodeSLO: %w", err)
		}
		if _, err := c.nodeMetric("life-1"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodeMetric: %w", err)
		}
		return nil
	})
}

// TestMalformedKeyKeepsNodeSLO: a malformed key leaves the NodeSLO's values from it alone while another key's
// change in the same edit still reaches the NodeSLO.
func TestMalformedKeyKeepsNodeSLO(t *testing.T) {
	c := start(t)
	c.node("bad-1")
	c.apply(map[string]string{
		sloconfig.CPUBurstConfigKey: `{"clusterStrategy": {"policy": "auto"}}`,
		sloconfig.SystemConfigKey:   `{"clusterStrategy": {"minFreeKbytesFactor": 120}}`,
	})
	c.waitSpec("bad-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if s.CPUBurstStrategy.Policy != "auto" || ptr.Deref(s.SystemStrategy.MinFreeKbytesFactor, 0) != 120 {
			return fmt.Errorf("not yet: %+v %+v", s.CPUBurstStrategy, s.SystemStrategy)
		}
		return nil
	})
	// Koordinator's template system-config with its missing comma, and a good cpu-burst change.
	c.apply(map[string]string{
		sloconfig.CPUBurstConfigKey: `{"clusterStrategy": {"policy": "cpuBurstOnly"}}`,
		sloconfig.SystemConfigKey:   seedValue(t, "template", sloconfig.SystemConfigKey),
	})
	slo := c.waitSpec("bad-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if s.CPUBurstStrategy.Policy != "cpuBurstOnly" {
			return fmt.Errorf("cpu burst policy %q, want cpuBurstOnly", s.CPUBurstStrategy.Policy)
		}
		return nil
	})
	if got := ptr.Deref(slo.Spec.SystemStrategy.MinFreeKbytesFactor, 0); got != 120 {
		t.Errorf("the malformed system-config must keep its last good value 120, got %d", got)
	}
}

// TestEditedNodeSLOIsRestored: the NodeSLO is the manager's; a hand edit or deletion is undone.
func TestEditedNodeSLOIsRestored(t *testing.T) {
	c := start(t)
	c.node("edit-1")
	c.apply(map[string]string{sloconfig.CPUBurstConfigKey: `{"clusterStrategy": {"policy": "auto"}}`})
	slo := c.waitSpec("edit-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if s.CPUBurstStrategy.Policy != "auto" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	patch := client.MergeFrom(slo.DeepCopy())
	slo.Spec.CPUBurstStrategy.Policy = slov1alpha1.CPUBurstNone
	if err := c.e.Client.Patch(context.Background(), slo, patch); err != nil {
		t.Fatal(err)
	}
	c.waitSpec("edit-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if s.CPUBurstStrategy.Policy != "auto" {
			return fmt.Errorf("policy %q, want auto restored", s.CPUBurstStrategy.Policy)
		}
		return nil
	})
	if err := c.e.Client.Delete(context.Background(), slo); err != nil {
		t.Fatal(err)
	}
	c.waitSpec("edit-1", func(s *slov1alpha1.NodeSLOSpec) error {
		if s.CPUBurstStrategy.Policy != "auto" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
}
