package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// gleanAt runs `kubectl glean ARGS...` with its clock at now, so that ages and staleness are exact.
func gleanAt(t *testing.T, now time.Time, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{Out: &out, ErrOut: &errOut}, clocktesting.NewFakeClock(now))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// createNodeMetric creates m and writes its status, as gleaner-manager (the object) and gleaner-agent (the status)
// do; it is deleted when the test ends.
func createNodeMetric(t *testing.T, e *testenv.Env, m *slov1alpha1.NodeMetric) {
	t.Helper()
	ctx := context.Background()
	status := m.Status
	if err := e.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), m) })
	m.Status = status
	if err := e.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// batchPod is a batch pod as the colocation profile webhook or a job owner writes one: batch labels and
// kubernetes.io/batch-* requests (limits equal: the API server wants them for extended resources).
func batchPod(name, node, cpuMilli, memory string) *testutil.PodBuilder {
	return testutil.Pod(name).Namespace("default").Node(node).
		Label(slov1alpha1.LabelPriorityClass, "batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Requests(string(slov1alpha1.BatchCPU), cpuMilli, string(slov1alpha1.BatchMemory), memory).
		Limits(string(slov1alpha1.BatchCPU), cpuMilli, string(slov1alpha1.BatchMemory), memory)
}

// topFixture: three nodes labelled top=yes. top-a has a current NodeMetric, a prod pod and a batch pod; top-b's
// NodeMetric is 20 minutes old (stale by the default degradeTimeMinutes, 15); top-c has none. top-a's agent reports
// its pods in status.podUsages (UID and usage, as agents do since the compact report), top-b's in status.podsMetric, as an agent
// one release older does (and without UID, as a record may): the output must not tell them apart.
// It returns the time the NodeMetrics' ages count from.
func topFixture(t *testing.T, e *testenv.Env) (now time.Time) {
	t.Helper()
	now = time.Now()
	e.CreateNode(t, testutil.Node("top-a").Label("top", "yes").Label("pool", "fast").
		Allocatable("cpu", "4", "memory", "8Gi", string(slov1alpha1.BatchCPU), "2000", string(slov1alpha1.BatchMemory), "4Gi",
			string(slov1alpha1.MidCPU), "1000", string(slov1alpha1.MidMemory), "1Gi").Obj())
	e.CreateNode(t, testutil.Node("top-b").Label("top", "yes").Label("pool", "slow").Allocatable("cpu", "2", "memory", "4Gi").Obj())
	e.CreateNode(t, testutil.Node("top-c").Label("top", "yes").Allocatable("cpu", "8", "memory", "16Gi").Obj())
	prod := e.CreatePod(t, testutil.Pod("top-prod").Namespace("default").Node("top-a").Requests("cpu", "1", "memory", "1Gi").Obj())
	batch := e.CreatePod(t, batchPod("top-batch", "top-a", "500", "512Mi").Obj())
	e.CreatePod(t, testutil.Pod("top-new").Namespace("kube-system").Node("top-a").Requests("cpu", "100m").Obj())
	e.CreatePod(t, testutil.Pod("top-b-pod").Namespace("default").Node("top-b").Requests("cpu", "200m").Obj())

	createNodeMetric(t, e, testutil.AsPodUsages(testutil.NodeMetric("top-a").Updated(now.Add(-30*time.Second)).
		NodeUsage("cpu", "1500m", "memory", "2Gi").
		Pod(prod, "cpu", "800m", "memory", "1Gi").
		Pod(batch, "cpu", "300m", "memory", "256Mi").
		// An ended pod of the same name as none here: its usage counts for its class, as the manager counts it.
		PodRecord("default", "gone", "gone-uid", slov1alpha1.PriorityBatch, slov1alpha1.QoSBE, "cpu", "100m", "memory", "64Mi").
		Obj()))
	createNodeMetric(t, e, testutil.NodeMetric("top-b").Updated(now.Add(-20*time.Minute)).
		NodeUsage("cpu", "250m", "memory", "512Mi").
		PodRecord("default", "top-b-pod", "", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "150m", "memory", "100Mi").
		Obj())
	return now
}

func TestTopNodes(t *testing.T) {
	e := env.Start(t)
	now := topFixture(t, e)

	out, errOut, err := gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "-l", "top=yes")
	if err != nil {
		t.Fatal(err)
	}
	// No NodeAllocations in this test: requests come from the pods, and it says so.
	for _, want := range []string{
		"warning: no NodeAllocation for node top-a, top-b, top-c",
		"warning: node top-b: NodeMetric top-b was last updated 20m0s ago, more than degradeTimeMinutes (15m0s); its usage is not current",
		"warning: node top-c: NodeMetric top-c does not exist; its usage is not current",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// Usage percentages of allocatable as kubectl top (1500m of 4 cores: 37%), requests as kubectl describe node
	// (1100m of 4: 27%), batch: used by batch pods (300m + 100m of the ended one) / requested / published.
	want := `NODE    CPU(cores)   CPU%   CPU REQUESTS   MEMORY(bytes)   MEMORY%   MEMORY REQUESTS   BATCH CPU USED/REQ/CAP   BATCH MEMORY USED/REQ/CAP   NODEMETRIC
top-a   1500m        37%    1100m (27%)    2048Mi          25%       1024Mi (12%)      400m/500m/2000m          320Mi/512Mi/4096Mi          30s
top-b   250m         12%    200m (10%)     512Mi           12%       0Mi (0%)          0m/0m/-                  0Mi/0Mi/-                   stale (20m)
top-c   -            -      0m (0%)        -               -         0Mi (0%)          -/0m/-                   -/0Mi/-                     missing
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// -o wide adds allocatable and the mid tier.
	out, _, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "top-a", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "4000m             8192Mi               0m/0m/1000m            0Mi/0Mi/1024Mi") {
		t.Errorf("wide output lacks allocatable and the mid tier:\n%s", out)
	}

	// -o json: the numbers in millicores and bytes.
	out, _, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "top-a", "top-c", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r TopNodesReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Nodes) != 2 {
		t.Fatalf("want top-a and top-c, got %+v", r.Nodes)
	}
	a := r.Nodes[0]
	a.Metric.UpdateTime = nil
	wantA := TopNode{Name: "top-a", Metric: MetricState{State: MetricCurrent},
		CPU:    NodeUse{Used: ptr.To[int64](1500), UsedPercent: ptr.To[int64](37), Requests: 1100, RequestsPercent: ptr.To[int64](27), Allocatable: 4000},
		Memory: NodeUse{Used: ptr.To[int64](2 << 30), UsedPercent: ptr.To[int64](25), Requests: 1 << 30, RequestsPercent: ptr.To[int64](12), Allocatable: 8 << 30},
		Batch: TierUse{CPU: TierResource{Capacity: ptr.To[int64](2000), Requests: 500, Used: ptr.To[int64](400)},
			Memory: TierResource{Capacity: ptr.To[int64](4 << 30), Requests: 512 << 20, Used: ptr.To[int64](320 << 20)}},
		Mid: TierUse{CPU: TierResource{Capacity: ptr.To[int64](1000), Used: ptr.To[int64](0)},
			Memory: TierResource{Capacity: ptr.To[int64](1 << 30), Used: ptr.To[int64](0)}},
	}
	if d := cmp.Diff(wantA, a); d != "" {
		t.Errorf("top-a (-want +got):\n%s", d)
	}
	if c := r.Nodes[1]; c.Metric.State != MetricMissing || c.CPU.Used != nil || c.Batch.CPU.Used != nil || c.CPU.Allocatable != 8000 {
		t.Errorf("top-c: %+v", c)
	}
	if r.RequestsSource != SourceLive {
		t.Errorf("requestsSource = %q", r.RequestsSource)
	}
}

// TestTopNodesSorts: by measured usage, largest first, nodes without a NodeMetric last; by name otherwise.
func TestTopNodesSorts(t *testing.T) {
	e := env.Start(t)
	now := topFixture(t, e)
	tests := []struct {
		sortBy string
		want   []string
	}{
		{"name", []string{"top-a", "top-b", "top-c"}},
		{"cpu", []string{"top-a", "top-b", "top-c"}},
		{"memory", []string{"top-a", "top-b", "top-c"}},
		{"cpu.requests", []string{"top-a", "top-b", "top-c"}},
		{"batch-cpu", []string{"top-a", "top-b", "top-c"}},
		{"batch-memory", []string{"top-a", "top-b", "top-c"}},
	}
	// top-c requests nothing and reports nothing; give it the most requests and top-b the least usage to tell the
	// orders apart.
	e.CreatePod(t, testutil.Pod("top-c-big").Namespace("default").Node("top-c").Requests("cpu", "3", "memory", "3Gi").Obj())
	tests[3].want = []string{"top-c", "top-a", "top-b"}
	tests = append(tests, struct {
		sortBy string
		want   []string
	}{"memory.requests", []string{"top-c", "top-a", "top-b"}})
	for _, tt := range tests {
		t.Run(tt.sortBy, func(t *testing.T) {
			out, _, err := gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "-l", "top=yes", "--sort-by", tt.sortBy, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			var r TopNodesReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range r.Nodes {
				got = append(got, n.Name)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("--sort-by %s (-want +got):\n%s", tt.sortBy, d)
			}
		})
	}
}

// TestTopNodesStalenessFollowsTheConfig: a NodeMetric is stale by the degradeTimeMinutes gleaner-manager applies
// to the node: the cluster strategy, else the first nodeConfigs entry that matches it.
func TestTopNodesStalenessFollowsTheConfig(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	now := topFixture(t, e)
	createNodeMetric(t, e, testutil.NodeMetric("top-c").Updated(now.Add(-20*time.Minute)).NodeUsage("cpu", "1", "memory", "1Gi").Obj())
	ensureNamespace(t, e, defaultManagerNamespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: defaultManagerNamespace, Name: defaultSLOConfigName},
		Data: map[string]string{sloconfig.ColocationConfigKey: `{"enable": true, "degradeTimeMinutes": 10,
			"nodeConfigs": [{"name": "slow", "nodeSelector": {"matchLabels": {"pool": "slow"}}, "degradeTimeMinutes": 30}]}`},
	}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), cm) })

	out, errOut, err := gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "-l", "top=yes", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r TopNodesReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range r.Nodes {
		got[n.Name] = n.Metric.State
	}
	// top-b (pool=slow, 30 minutes) is current at 20 minutes; top-c (the cluster's 10 minutes) is stale.
	want := map[string]string{"top-a": MetricCurrent, "top-b": MetricCurrent, "top-c": MetricStale}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	if !strings.Contains(errOut, "NodeMetric top-c was last updated 20m0s ago, more than degradeTimeMinutes (10m0s)") {
		t.Errorf("stderr:\n%s", errOut)
	}

	// A value the manager rejects leaves the last good one in force, as in the manager.
	cm.Data[sloconfig.ColocationConfigKey] = `{"degradeTimeMinutes": -1}`
	if err := e.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	lastGood := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: defaultManagerNamespace, Name: defaultSLOConfigName + "-last-good"},
		Data:       map[string]string{sloconfig.ColocationConfigKey: `{"degradeTimeMinutes": 25}`},
	}
	if err := e.Client.Create(ctx, lastGood); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), lastGood) })
	_, errOut, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "-l", "top=yes")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut, "top-b:") || strings.Contains(errOut, "top-c:") || !strings.Contains(errOut, "top-a") {
		t.Errorf("with the last good 25 minutes, top-b and top-c are current:\n%s", errOut)
	}
}

func TestTopPods(t *testing.T) {
	e := env.Start(t)
	now := topFixture(t, e)

	// -n default: the context's namespace is none in envtest's kubeconfig, so "default" is also what no -n gives.
	out, errOut, err := gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "pods", "--sort-by", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME        CPU(cores)   CPU REQUESTS   MEMORY(bytes)   MEMORY REQUESTS   QOS   PRIORITY
top-prod    800m         1000m          1024Mi          1024Mi            LS    prod
top-batch   300m         500m           256Mi           512Mi             BE    batch
top-b-pod   150m         200m           100Mi           0Mi               LS    prod
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "warning: node top-b: NodeMetric top-b was last updated 20m0s ago") {
		t.Errorf("stderr does not say top-b's NodeMetric is stale:\n%s", errOut)
	}

	// -A with -l and -o wide: the namespace column, the node and the NodeMetric's state; a pod the NodeMetric has no
	// record of yet shows no usage.
	out, _, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "pods", "-A", "-l", "!"+slov1alpha1.LabelPriorityClass, "-o", "wide", "--sort-by", "memory")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"default       top-prod    800m         1000m          1024Mi          1024Mi            LS    prod       Burstable        top-a   30s",
		"kube-system   top-new     -            100m           -               0Mi               LS    prod       Burstable        top-a   30s",
		"default       top-b-pod   150m         200m           100Mi           0Mi               LS    prod       Burstable        top-b   stale (20m)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-A -o wide lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "top-batch") {
		t.Errorf("-l did not select:\n%s", out)
	}

	// A named pod, -o json.
	out, _, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "pods", "top-batch", "-n", "default", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r TopPodsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Pods) != 1 {
		t.Fatalf("want top-batch only: %+v", r.Pods)
	}
	p := r.Pods[0]
	if p.Name != "top-batch" || p.Node != "top-a" || p.QoS != slov1alpha1.QoSBE || p.Priority != slov1alpha1.PriorityBatch ||
		p.KubeQoS != corev1.PodQOSBestEffort || p.Metric.State != MetricCurrent ||
		!cmp.Equal(p.CPU, PodUse{Used: ptr.To[int64](300), Requests: 500}) ||
		!cmp.Equal(p.Memory, PodUse{Used: ptr.To[int64](256 << 20), Requests: 512 << 20}) {
		t.Errorf("top-batch: %+v", p)
	}
}

func TestTopErrors(t *testing.T) {
	e := env.Start(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad sort key", []string{"top", "nodes", "--sort-by", "cpu.limits"}, `--sort-by "cpu.limits": want one of name, cpu, memory`},
		{"sort key of nodes for pods", []string{"top", "pods", "--sort-by", "batch-cpu"}, `--sort-by "batch-cpu"`},
		{"bad output", []string{"top", "nodes", "-o", "custom-columns=N:.name"}, `-o "custom-columns=N:.name": want wide, name, json, yaml, jsonpath=TEMPLATE`},
		{"bad selector", []string{"top", "pods", "-l", "a=(b"}, `-l "a=(b"`},
		{"unknown node", []string{"top", "nodes", "no-such-node"}, `node "no-such-node" not found`},
		{"unknown pod", []string{"top", "pods", "no-such-pod", "-n", "default"}, `pod "no-such-pod" not found in namespace "default"`},
		{"pod name with -A", []string{"top", "pods", "x", "-A"}, "a pod name cannot be given with -A"},
		{"unknown context", []string{"--context", "nope", "top", "pods"}, `context "nope" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := glean(t, append([]string{"--kubeconfig", e.Kubeconfig}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// No subcommand: the help, not an error.
	if out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "top"); err != nil || !strings.Contains(out, "Available Commands:\n  nodes ") {
		t.Errorf("kubectl glean top: err %v, out:\n%s", err, out)
	}
}

// TestTopNothingFound: a selector that matches nothing prints what kubectl prints, and no header.
func TestTopNothingFound(t *testing.T) {
	e := env.Start(t)
	for _, args := range [][]string{
		{"top", "nodes", "-l", "top=none"},
		{"top", "pods", "-A", "-l", "top=none"},
	} {
		out, errOut, err := glean(t, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if out != "" || !strings.Contains(errOut, "No "+args[1]+" found.") {
			t.Errorf("%v: stdout %q, stderr %q", args, out, errOut)
		}
		out, _, err = glean(t, append(append([]string{"--kubeconfig", e.Kubeconfig}, args...), "-o", "json")...)
		if err != nil || !strings.Contains(out, `"`+args[1]+`": []`) {
			t.Errorf("%v -o json: err %v, out %q", args, err, out)
		}
	}
}

// TestTopWithoutTheNodeMetricAPI: a cluster without Gleaner's CRDs gets a plain error, not a table of dashes.
func TestTopWithoutTheNodeMetricAPI(t *testing.T) {
	e := env.Start(t)
	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: slov1alpha1.GroupVersion.Group, Kind: "NodeMetric"}}
		},
	})
	_, err = listNodeMetrics(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "the NodeMetric API (nodemetrics.slo.gleaner.sh) is not installed") {
		t.Errorf("err = %v", err)
	}
}

// TestTopReadsReportsAsTheManagerDoes: bogus reports are shown as gleaner-manager calculates with them, held to
// [0, the node's capacity], and each node says what was corrected (once, a negative usage printed "-5000m -31%",
// 1E CPU "0m 0%", and a report stamped ahead "stale (<invalid>)", none with a warning).
func TestTopReadsReportsAsTheManagerDoes(t *testing.T) {
	e := env.Start(t)
	now := time.Now().Truncate(time.Second) // as the API server stores updateTime
	e.CreateNode(t, testutil.Node("bogus-neg").Label("bogus", "yes").Allocatable("cpu", "16", "memory", "64Gi").Obj())
	e.CreateNode(t, testutil.Node("bogus-huge").Label("bogus", "yes").Allocatable("cpu", "8", "memory", "16Gi").Obj())
	e.CreateNode(t, testutil.Node("bogus-ahead").Label("bogus", "yes").Allocatable("cpu", "4", "memory", "8Gi").Obj())
	neg := e.CreatePod(t, batchPod("bogus-neg-pod", "bogus-neg", "500", "512Mi").Label("bogus", "yes").Obj())
	createNodeMetric(t, e, testutil.NodeMetric("bogus-neg").Updated(now.Add(-30*time.Second)).
		NodeUsage("cpu", "-5000m", "memory", "-14336Mi").Pod(neg, "cpu", "-3000m", "memory", "100Mi").Obj())
	createNodeMetric(t, e, testutil.NodeMetric("bogus-huge").Updated(now.Add(-30*time.Second)).
		NodeUsage("cpu", "1E", "memory", "1e30").Obj())
	createNodeMetric(t, e, testutil.NodeMetric("bogus-ahead").Updated(now.Add(time.Hour)).
		NodeUsage("cpu", "1", "memory", "1Gi").Obj())

	out, errOut, err := gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "-l", "bogus=yes")
	if err != nil {
		t.Fatal(err)
	}
	want := `NODE          CPU(cores)   CPU%   CPU REQUESTS   MEMORY(bytes)   MEMORY%   MEMORY REQUESTS   BATCH CPU USED/REQ/CAP   BATCH MEMORY USED/REQ/CAP   NODEMETRIC
bogus-ahead   1000m        25%    0m (0%)        1024Mi          12%       0Mi (0%)          0m/0m/-                  0Mi/0Mi/-                   stale (60m ahead)
bogus-huge    8000m        100%   0m (0%)        16384Mi         100%      0Mi (0%)          0m/0m/-                  0Mi/0Mi/-                   30s
bogus-neg     0m           0%     0m (0%)        0Mi             0%        0Mi (0%)          0m/500m/-                100Mi/512Mi/-               30s
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for _, want := range []string{
		"warning: node bogus-ahead: NodeMetric bogus-ahead was updated at " + now.Add(time.Hour).UTC().Format(time.RFC3339) +
			", 1h0m0s ahead of the manager's clock, more than the clock skew allowed (1m0s); its usage is not current",
		"warning: node bogus-huge: NodeMetric bogus-huge reports cpu outside [0, capacity 8]; clamped nodeUsage 1E to 8; its usage is shown clamped, as gleaner-manager reads it",
		"warning: node bogus-huge: NodeMetric bogus-huge reports memory outside [0, capacity 16Gi]; clamped nodeUsage 1e30 to 16Gi; its usage is shown clamped, as gleaner-manager reads it",
		"warning: node bogus-neg: NodeMetric bogus-neg reports cpu outside [0, capacity 16]; clamped nodeUsage -5 to 0, pod default/bogus-neg-pod -3 to 0; its usage is shown clamped, as gleaner-manager reads it",
		"warning: node bogus-neg: NodeMetric bogus-neg reports memory outside [0, capacity 64Gi]; clamped nodeUsage -14Gi to 0; its usage is shown clamped, as gleaner-manager reads it",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	// -o json carries the corrections.
	out, _, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "nodes", "bogus-neg", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r TopNodesReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 1 || len(r.Nodes[0].Metric.Corrected) != 2 || *r.Nodes[0].CPU.Used != 0 {
		t.Errorf("-o json: %+v", r.Nodes)
	}

	// top pods: the pod's negative usage is clamped too, and its node says so.
	out, errOut, err = gleanAt(t, now, "--kubeconfig", e.Kubeconfig, "top", "pods", "-l", "bogus=yes")
	if err != nil {
		t.Fatal(err)
	}
	want = `NAME            CPU(cores)   CPU REQUESTS   MEMORY(bytes)   MEMORY REQUESTS   QOS   PRIORITY
bogus-neg-pod   0m           500m           100Mi           512Mi             BE    batch
`
	if out != want {
		t.Errorf("top pods output:\n%s\nwant:\n%s", out, want)
	}
	if w := "warning: node bogus-neg: NodeMetric bogus-neg reports cpu outside [0, capacity 16]; clamped nodeUsage -5 to 0, pod default/bogus-neg-pod -3 to 0; the usage of its pods is shown clamped, as gleaner-manager reads it"; !strings.Contains(errOut, w) {
		t.Errorf("top pods stderr lacks %q:\n%s", w, errOut)
	}
}

// TestFormatsOfEveryVerb runs each verb with each -o it takes on one cluster: json parses, yaml is the same object,
// jsonpath prints what the JSON holds at its path, name lists the objects as kind/name, and --no-headers is the
// table without its header line. (explain's formats: TestExplain*, which need a NodeResourceExplanation.)
func TestFormatsOfEveryVerb(t *testing.T) {
	e := env.Start(t)
	now := topFixture(t, e)
	run := func(args ...string) string {
		t.Helper()
		out, _, err := gleanAt(t, now, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
		if err != nil && args[0] != "check" { // check exits 1 on a failed check, after its output
			t.Fatalf("kubectl glean %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	for _, v := range []struct {
		args  []string
		path  string   // a JSONPath into -o json's object
		names []string // -o name's lines; nil where the verb lists no objects
		table bool
	}{
		{[]string{"nodes", "-l", "top=yes"}, "{.nodes[0].name}", []string{"node/top-a", "node/top-b", "node/top-c"}, true},
		{[]string{"top", "nodes", "-l", "top=yes"}, "{.nodes[0].name}", []string{"node/top-a", "node/top-b", "node/top-c"}, true},
		{[]string{"top", "pods", "-n", "default"}, "{.pods[0].name}", []string{"pod/top-b-pod", "pod/top-batch", "pod/top-prod"}, true},
		{[]string{"check", "-l", "top=yes"}, "{.checks[0].check}", nil, true},
		{[]string{"version"}, "{.clientVersion.goVersion}", nil, false},
	} {
		t.Run(strings.Join(v.args, " "), func(t *testing.T) {
			var asJSON any
			if err := json.Unmarshal([]byte(run(append(v.args, "-o", "json")...)), &asJSON); err != nil {
				t.Fatalf("-o json: %v", err)
			}
			var asYAML any
			if err := yaml.Unmarshal([]byte(run(append(v.args, "-o", "yaml")...)), &asYAML); err != nil {
				t.Fatalf("-o yaml: %v", err)
			}
			if d := cmp.Diff(asJSON, asYAML); d != "" {
				t.Errorf("-o yaml is not -o json's object (-json +yaml):\n%s", d)
			}
			want := jsonPathOf(t, asJSON, v.path)
			if got := run(append(v.args, "-o", "jsonpath="+v.path)...); got != want || want == "" {
				t.Errorf("-o jsonpath=%s: %q, want %q", v.path, got, want)
			}
			if v.names != nil {
				got := strings.Fields(run(append(v.args, "-o", "name")...))
				slices.Sort(got)
				if !slices.Equal(got, v.names) {
					t.Errorf("-o name: %q, want %q", got, v.names)
				}
			}
			if v.table {
				header, rest, _ := strings.Cut(run(v.args...), "\n")
				if bare := run(append(v.args, "--no-headers")...); header == "" || cells(bare) != cells(rest) {
					t.Errorf("--no-headers:\n%s\nwant the table less its header %q:\n%s", bare, header, rest)
				}
			} else if _, _, err := gleanAt(t, now, append(v.args, "--no-headers")...); err == nil {
				t.Error("--no-headers is taken by a verb that prints no table")
			}
		})
	}
}

// jsonPathOf is what path finds in data, printed as -o jsonpath prints it.
func jsonPathOf(t *testing.T, data any, path string) string {
	t.Helper()
	p := jsonpath.New("want")
	if err := p.Parse(path); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
