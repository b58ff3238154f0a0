// Package parity checks Gleaner's allocation numbers against the reference: `kubectl describe node` of the API
// server's own version (v1.36.3, testenv's e.Kubectl). Many pod shapes go on real nodes of a real API server; the
// NodeAllocation the controller writes and the output of `kubectl glean nodes -o json` (stored and --live, with
// --pods for the per-pod rows) must agree with kubectl, resource by resource, value and percentage.
package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/cli"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeallocation"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/describe"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// shape is one pod of the parity set: how it is built and what happens to it after creation.
type shape struct {
	pod   *corev1.Pod
	phase corev1.PodPhase // set after creation; "" keeps Pending
	// terminating pods get a finalizer and are deleted, so they stay with a deletion timestamp.
	terminating bool
	// status, when set, is written to status.containerStatuses (an in-place resize the kubelet has applied).
	status []corev1.ContainerStatus
}

const node = "parity"

func pod(name string) *testutil.PodBuilder { return testutil.Pod(name).Node(node) }

func shapes() []shape {
	running := corev1.PodRunning
	return []shape{
		{pod: pod("no-resources").Container("c").Obj(), phase: running},
		{pod: pod("requests-only").Requests("cpu", "100m", "memory", "128Mi").Obj(), phase: running},
		// The API server copies limits into missing requests.
		{pod: pod("limits-only").Limits("cpu", "500m", "memory", "256Mi").Obj(), phase: running},
		{pod: pod("burstable").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "1", "memory", "512Mi").Obj(), phase: running},
		{pod: pod("guaranteed").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj(), phase: running},
		{pod: pod("two-containers").Container("a").Requests("cpu", "150m", "memory", "100M").Limits("memory", "200M").
			Container("b").Requests("cpu", "75m", "memory", "33Mi").Limits("cpu", "300m").Obj(), phase: running},
		{pod: pod("init-bigger").InitContainer("init", false).Requests("cpu", "2", "memory", "2Gi").Limits("cpu", "2500m").
			Container("c").Requests("cpu", "500m", "memory", "256Mi").Limits("cpu", "1").Obj(), phase: running},
		{pod: pod("init-smaller").InitContainer("init", false).Requests("cpu", "50m", "memory", "10Mi").
			Container("c").Requests("cpu", "300m", "memory", "300Mi").Obj(), phase: running},
		{pod: pod("sidecar-before-init").InitContainer("side", true).Requests("cpu", "200m", "memory", "50Mi").Limits("cpu", "400m").
			InitContainer("init", false).Requests("cpu", "1", "memory", "100Mi").
			Container("c").Requests("cpu", "500m", "memory", "200Mi").Obj(), phase: running},
		{pod: pod("sidecar-after-init").InitContainer("init", false).Requests("cpu", "1", "memory", "100Mi").
			InitContainer("side", true).Requests("cpu", "200m", "memory", "50Mi").
			Container("c").Requests("cpu", "500m", "memory", "200Mi").Obj(), phase: running},
		// RuntimeClass admission fills spec.overhead from the RuntimeClass.
		{pod: withRuntimeClass(pod("overhead-with-limits").Requests("cpu", "100m", "memory", "64Mi").Limits("cpu", "200m", "memory", "128Mi").Obj()), phase: running},
		{pod: withRuntimeClass(pod("overhead-without-limits").Requests("cpu", "200m", "memory", "100Mi").Obj()), phase: running},
		{pod: pod("pod-level").PodRequests("cpu", "1", "memory", "1Gi").PodLimits("cpu", "2", "memory", "2Gi").
			Container("c").Requests("cpu", "100m", "memory", "100Mi").Obj(), phase: running},
		{pod: pod("pod-level-requests-only").PodRequests("cpu", "600m").Container("a").Container("b").Obj(), phase: running},
		{pod: pod("gpu").Requests("cpu", "100m", "example.com/gpu", "1").Limits("example.com/gpu", "1").Obj(), phase: running},
		{pod: pod("batch").Requests("kubernetes.io/batch-cpu", "1500", "kubernetes.io/batch-memory", "2Gi").
			Limits("kubernetes.io/batch-cpu", "1500", "kubernetes.io/batch-memory", "2Gi").Obj(), phase: running},
		{pod: pod("hugepages").Requests("memory", "128Mi", "hugepages-2Mi", "256Mi").Limits("hugepages-2Mi", "256Mi").Obj(), phase: running},
		{pod: pod("ephemeral-storage").Requests("cpu", "10m", "ephemeral-storage", "1Gi").Limits("ephemeral-storage", "2Gi").Obj(), phase: running},
		{pod: pod("pending").Requests("cpu", "150m", "memory", "1000M").Obj()},
		{pod: pod("succeeded").Requests("cpu", "3", "memory", "3Gi").Obj(), phase: corev1.PodSucceeded},
		{pod: pod("failed").Requests("cpu", "3", "memory", "3Gi").Obj(), phase: corev1.PodFailed},
		{pod: pod("terminating").Requests("cpu", "400m", "memory", "400Mi").Obj(), phase: running, terminating: true},
		{pod: pod("resized").Requests("cpu", "500m", "memory", "100Mi").Limits("cpu", "500m").Obj(), phase: running,
			status: []corev1.ContainerStatus{{Name: "c0", Image: "pause", Ready: true,
				AllocatedResources: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("100Mi")},
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("100Mi")},
					Limits:   corev1.ResourceList{"cpu": resource.MustParse("1")},
				}}}},
		{pod: testutil.Pod("elsewhere").Node("parity-other").Requests("cpu", "2").Obj(), phase: running},
		{pod: testutil.Pod("unbound").Requests("cpu", "2").Obj()},
		// The node with capacity only.
		{pod: testutil.Pod("cap-a").Node("parity-capacity").Requests("cpu", "333m", "memory", "1Gi").Limits("cpu", "1").Obj(), phase: running},
		{pod: testutil.Pod("cap-b").Node("parity-capacity").Requests("cpu", "333m").Obj(), phase: running},
	}
}

func withRuntimeClass(p *corev1.Pod) *corev1.Pod {
	rc := "kata"
	p.Spec.RuntimeClassName = &rc
	return p
}

func TestDescribeNodeParity(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	c := e.Client

	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("64Mi")}}}
	mustCreate(t, c, rc)
	for _, n := range []*corev1.Node{
		testutil.Node(node).
			Capacity("cpu", "4", "memory", "8111548Ki", "ephemeral-storage", "51175Mi", "pods", "110", "hugepages-2Mi", "1Gi", "hugepages-1Gi", "0").
			Allocatable("cpu", "3500m", "memory", "7599548Ki", "ephemeral-storage", "48294789041", "pods", "110",
				"hugepages-2Mi", "1Gi", "hugepages-1Gi", "0", "example.com/gpu", "4",
				"kubernetes.io/batch-cpu", "6000", "kubernetes.io/batch-memory", "12Gi").Obj(),
		testutil.Node("parity-capacity").Capacity("cpu", "3", "memory", "5Gi", "pods", "10").Obj(),
		testutil.Node("parity-other").Allocatable("cpu", "4", "memory", "8Gi").Obj(),
	} {
		e.CreateNode(t, n)
	}
	for _, s := range shapes() {
		createShape(t, c, s)
	}

	startController(t, e)

	for _, name := range []string{node, "parity-capacity"} {
		t.Run(name, func(t *testing.T) {
			want, raw := describeNode(t, e, name)
			t.Logf("kubectl describe node %s (v1.36.3):\n%s", name, raw)

			na := &slov1alpha1.NodeAllocation{}
			testenv.Eventually(t, "NodeAllocation "+name+" matches kubectl describe node", func() error {
				if err := c.Get(ctx, client.ObjectKey{Name: name}, na); err != nil {
					return err
				}
				if na.Status.PodCount != want.Pods {
					return fmt.Errorf("NodeAllocation counts %d pods, kubectl %d", na.Status.PodCount, want.Pods)
				}
				return nil
			})
			expectNoDiffs(t, want.DiffStatus(na.Status))

			stored := gleanNodes(t, e, name, "-o", "json")
			if stored.Source != cli.SourceNodeAllocation {
				t.Errorf("kubectl glean nodes read %q, want the NodeAllocation", stored.Source)
			}
			expectNoDiffs(t, want.DiffReport("kubectl glean nodes", stored.Nodes[0]))
			live := gleanNodes(t, e, name, "--live", "-o", "json")
			expectNoDiffs(t, want.DiffReport("kubectl glean nodes --live", live.Nodes[0]))
			withPods := gleanNodes(t, e, name, "--pods", "-o", "json")
			expectNoDiffs(t, want.DiffReport("kubectl glean nodes --pods", withPods.Nodes[0]))
			expectNoDiffs(t, want.DiffPodRows(withPods.Nodes[0]))
		})
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func createShape(t *testing.T, c client.Client, s shape) {
	t.Helper()
	ctx := context.Background()
	p := s.pod
	p.UID = ""
	p.Status = corev1.PodStatus{}
	if s.terminating {
		p.Finalizers = []string{"gleaner.sh/parity-test"}
	}
	mustCreate(t, c, p)
	if s.phase != "" || s.status != nil {
		if s.phase != "" {
			p.Status.Phase = s.phase
		}
		p.Status.ContainerStatuses = s.status
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatalf("setting the status of pod %s: %v", p.Name, err)
		}
	}
	if s.terminating {
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cur := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err == nil {
				cur.Finalizers = nil
				_ = c.Update(context.Background(), cur)
			}
		})
	}
}

// startController runs gleaner-manager itself (manager.New: its cache options, which keep only part of each pod,
// and its shared indexes) with the nodeallocation controller, until the test ends.
func startController(t *testing.T, e *testenv.Env) {
	t.Helper()
	opts := manager.NewOptions()
	opts.LeaderElect, opts.MetricsAddr, opts.HealthAddr = false, "0", "0"
	opts.Controllers = []string{nodeallocation.Name}
	opts.Webhook = manager.WebhookOptions{} // the webhook validates the SLO ConfigMap; no part of this test
	mgr, err := manager.New(e.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gleaner-manager: %v", err)
		}
	})
}

// describeNode runs the reference, kubectl v1.36.3's describe, and reads it.
func describeNode(t *testing.T, e *testenv.Env, name string) (describe.Node, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := e.Kubectl("describe", "node", name)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl describe node %s: %v\n%s", name, err, errOut.String())
	}
	d, err := describe.Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("kubectl describe node %s: %v\n%s", name, err, out.String())
	}
	return d, out.String()
}

func expectNoDiffs(t *testing.T, diffs []string) {
	t.Helper()
	for _, d := range diffs {
		t.Error(d)
	}
}

// gleanNodes runs `kubectl glean nodes NODE ARGS...` in-process against the test API server.
func gleanNodes(t *testing.T, e *testenv.Env, name string, args ...string) cli.Report {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{Out: &out, ErrOut: &errOut}, clocktesting.NewFakeClock(time.Now()))
	cmd.SetArgs(append([]string{"--kubeconfig", e.Kubeconfig, "nodes", name}, args...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl glean nodes %s %s: %v\n%s", name, strings.Join(args, " "), err, errOut.String())
	}
	var r cli.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("kubectl glean nodes -o json printed no report: %v\n%s", err, out.String())
	}
	if len(r.Nodes) != 1 {
		t.Fatalf("kubectl glean nodes %s: %d nodes in the report, want 1", name, len(r.Nodes))
	}
	return r
}
