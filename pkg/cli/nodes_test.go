package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// glean runs `kubectl glean ARGS...` in-process and returns its stdout, stderr and error.
func glean(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{Out: &out, ErrOut: &errOut}, clocktesting.NewFakeClock(time.Now()))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestNodesComputesLiveWhenNoNodeAllocationExists(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, testutil.Node("live-a").Label("zone", "a").Allocatable("cpu", "2", "memory", "4Gi").Obj())
	e.CreateNode(t, testutil.Node("live-b").Label("zone", "b").Allocatable("cpu", "2", "memory", "4Gi").Obj())
	e.CreatePod(t, testutil.Pod("live-1").Namespace("default").Node("live-a").Requests("cpu", "500m").Obj())
	e.CreatePod(t, testutil.Pod("live-2").Namespace("kube-system").Node("live-a").Requests("cpu", "250m", "memory", "1Gi").Obj())

	out, errOut, err := glean(t, "--kubeconfig", e.Kubeconfig, "nodes", "-l", "zone=a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "warning: no NodeAllocation for node live-a (is gleaner-manager running?)") {
		t.Errorf("stderr does not explain the fallback: %q", errOut)
	}
	want := `NODE     RESOURCE            REQUESTS     LIMITS
live-a   cpu                 750m (37%)   0 (0%)
live-a   memory              1Gi (25%)    0 (0%)
live-a   ephemeral-storage   0 (0%)       0 (0%)
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// -n restricts the pod rows, never the totals.
	out, _, err = glean(t, "--kubeconfig", e.Kubeconfig, "nodes", "live-a", "--pods", "-n", "kube-system", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 1 || len(r.Nodes[0].Pods) != 1 || r.Nodes[0].Pods[0].Name != "live-2" || r.Nodes[0].PodCount != 2 {
		t.Errorf("--pods -n kube-system: %+v", r.Nodes)
	}
}

func TestNodesReadsNodeAllocations(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	node := testutil.Node("stored").Allocatable("cpu", "4", "memory", "8Gi").Obj()
	e.CreateNode(t, node)
	e.CreatePod(t, testutil.Pod("stored-1").Node("stored").Requests("cpu", "1").Obj())
	// The stored summary says 3 CPUs: what the plugin prints must come from it, not from the pods.
	st := allocation.Summarize(node, []corev1.Pod{*testutil.Pod("x").Node("stored").Requests("cpu", "3").Obj()}).Status()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	st.UpdateTime = &now
	na := &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: "stored"}}
	if err := e.Client.Create(ctx, na); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), na) })
	na.Status = st
	if err := e.Client.Status().Update(ctx, na); err != nil {
		t.Fatal(err)
	}

	out, errOut, err := glean(t, "--kubeconfig", e.Kubeconfig, "nodes", "stored", "-o", "yaml")
	if err != nil || errOut != "" {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	for _, want := range []string{"source: NodeAllocation", "requests: \"3\"", "requestsPercent: 75"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = glean(t, "--kubeconfig", e.Kubeconfig, "nodes", "stored", "--live")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "stored   cpu                 1 (25%)") {
		t.Errorf("--live did not compute from the pods:\n%s", out)
	}
}

func TestNodesFallsBackWithoutTheAPI(t *testing.T) {
	e := env.Start(t)
	base, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	noAPI := interceptor.NewClient(base, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: slov1alpha1.GroupVersion.Group, Kind: "NodeAllocation"}}
		},
	})
	var errOut bytes.Buffer
	f := &Factory{Streams: Streams{Out: &bytes.Buffer{}, ErrOut: &errOut}}
	reports, err := fromNodeAllocations(context.Background(), f, noAPI, []corev1.Node{*testutil.Node("n").Obj()})
	if err != nil || reports != nil {
		t.Fatalf("reports %v, err %v: want a fallback", reports, err)
	}
	if !strings.Contains(errOut.String(), "the NodeAllocation API is not installed") {
		t.Errorf("stderr = %q", errOut.String())
	}
}

func TestNodesErrors(t *testing.T) {
	e := env.Start(t)
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "unreachable")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown node", []string{"--kubeconfig", e.Kubeconfig, "nodes", "no-such-node"}, `node "no-such-node" not found`},
		{"unknown nodes among many", []string{"--kubeconfig", e.Kubeconfig, "nodes", "nope-1", "nope-2", "-l", "x=y"}, `nodes "nope-1", "nope-2" not found or not matching -l x=y`},
		{"bad output", []string{"--kubeconfig", e.Kubeconfig, "nodes", "-o", "table"}, `-o "table": want wide, name, json, yaml, jsonpath=TEMPLATE`},
		{"bad sort key", []string{"--kubeconfig", e.Kubeconfig, "nodes", "--sort-by", "cpu"}, `--sort-by "cpu"`},
		{"bad selector", []string{"--kubeconfig", e.Kubeconfig, "nodes", "-l", "a=(b"}, `-l "a=(b"`},
		{"unreachable API server", []string{"--kubeconfig", unreachable, "--request-timeout", "5s", "nodes"}, "is the cluster reachable?"},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(dir, "missing"), "nodes"}, "loading the kubeconfig"},
		{"unknown context", []string{"--kubeconfig", e.Kubeconfig, "--context", "nope", "nodes"}, `context "nope" does not exist`},
		{"unknown flag", []string{"nodes", "--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := glean(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestPodSourcesAgree checks that the streamed watch-list and the paginated list (the fallback for API servers
// without watch-list) see the same pods: bound, neither Succeeded nor Failed.
func TestPodSourcesAgree(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	e.CreateNode(t, testutil.Node("src").Allocatable("cpu", "2").Obj())
	for i := range 7 {
		e.CreatePod(t, testutil.Pod(fmt.Sprintf("src-%d", i)).Node("src").Container("c").Obj())
	}
	done := testutil.Pod("src-done").Node("src").Container("c").Obj()
	e.CreatePod(t, done)
	done.Status.Phase = corev1.PodSucceeded
	if err := e.Client.Status().Update(ctx, done); err != nil {
		t.Fatal(err)
	}
	e.CreatePod(t, testutil.Pod("src-unbound").Container("c").Obj())

	cs, _, err := (&Factory{kubeconfig: e.Kubeconfig}).Clients()
	if err != nil {
		t.Fatal(err)
	}
	const selector = "spec.nodeName=src,status.phase!=Succeeded,status.phase!=Failed"
	var streamed, listed []string
	started, err := watchListPods(ctx, cs, selector, func(p *corev1.Pod) { streamed = append(streamed, p.Name) })
	if err != nil || !started {
		t.Fatalf("watch-list: started %v, err %v", started, err)
	}
	if err := listPods(ctx, cs, selector, func(p *corev1.Pod) { listed = append(listed, p.Name) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(streamed)
	want := []string{"src-0", "src-1", "src-2", "src-3", "src-4", "src-5", "src-6"}
	if d := cmp.Diff(want, streamed); d != "" {
		t.Errorf("watch-list (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, listed); d != "" {
		t.Errorf("paginated list (-want +got):\n%s", d)
	}
}
