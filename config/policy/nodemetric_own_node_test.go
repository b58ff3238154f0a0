package policy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const (
	namespace = "gleaner-system"
	agentSA   = "gleaner-agent"
	managerSA = "gleaner-manager"
	policy    = "gleaner-agent-own-nodemetric"
)

// TestAgentWritesOnlyItsOwnNodeMetric: two agents, each with the token the kubelet would mount into its pod (a
// TokenRequest bound to the pod, which carries the pod's node), and the agent's RBAC as config/default installs it.
// Without the policy, agent A can rewrite node B's report; with it, A writes only NodeMetric A, a token bound to
// no pod writes nothing, and gleaner-manager is not affected.
func TestAgentWritesOnlyItsOwnNodeMetric(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	objs := render(t, e, "../default")
	install(t, e, objs, "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")

	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	agentA := agentClient(t, e, cs, "node-a")
	agentB := agentClient(t, e, cs, "node-b")
	unbound := tokenClient(t, e, requestToken(t, cs, agentSA, nil))
	manager := tokenClient(t, e, requestToken(t, cs, managerSA, nil))
	for _, n := range []string{"node-a", "node-b"} {
		if err := e.Client.Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.Client.Delete(context.Background(), &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: n}})
		})
	}

	// Without the policy RBAC alone decides, and it lets any agent write any node's report.
	if err := writeReport(agentA, "node-b", "1"); err != nil {
		t.Fatalf("without the policy, agent A writing NodeMetric node-b: want it allowed (RBAC alone), got %v", err)
	}

	install(t, e, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	// The API server compiles a new policy in the background: poll until it refuses.
	testenv.Eventually(t, "the policy refuses agent A's write to NodeMetric node-b", func() error {
		return expectRefused(writeReport(agentA, "node-b", "2"), "gleaner-agent on node node-a may write only NodeMetric node-a, not node-b")
	})
	if err := expectRefused(writeReport(agentB, "node-a", "3"), "gleaner-agent on node node-b may write only NodeMetric node-b, not node-a"); err != nil {
		t.Error(err)
	}
	if err := expectRefused(writeReport(unbound, "node-a", "4"), "gleaner-agent may write a NodeMetric only with a service-account token bound to a pod on a node"); err != nil {
		t.Errorf("a token bound to no pod: %v", err)
	}
	for _, w := range []struct {
		c    client.Client
		node string
	}{{agentA, "node-a"}, {agentB, "node-b"}} {
		if err := writeReport(w.c, w.node, "5"); err != nil {
			t.Errorf("the agent of %s writing its own NodeMetric: %v", w.node, err)
		}
	}
	// NodeMetric node-b still holds what agent B wrote, not agent A's refused reports.
	nm := &slov1alpha1.NodeMetric{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "node-b"}, nm); err != nil {
		t.Fatal(err)
	}
	if got := nm.Status.NodeMetric.NodeUsage[corev1.ResourceCPU]; got.String() != "5" {
		t.Errorf("NodeMetric node-b reports cpu %s, want 5 (agent B's own report)", got.String())
	}
	// gleaner-manager writes every NodeMetric's spec, as before.
	orig := nm.DeepCopy()
	nm.Spec.CollectPolicy = &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](30)}
	if err := manager.Patch(ctx, nm, client.MergeFrom(orig)); err != nil {
		t.Errorf("gleaner-manager writing the spec of NodeMetric node-b: %v", err)
	}
}

// TestAgentWritesOnlyItsOwnNodeResourceTopology: the same policy holds the agents to their own node's
// NodeResourceTopology, which the agent's ClusterRole lets them create and update.
func TestAgentWritesOnlyItsOwnNodeResourceTopology(t *testing.T) {
	e := env.Start(t)
	e.InstallTopologyCRD(t)
	objs := render(t, e, "../default")
	install(t, e, objs, "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	agentC := agentClient(t, e, cs, "node-c")
	unbound := tokenClient(t, e, requestToken(t, cs, agentSA, nil))
	for _, n := range []string{"node-c", "node-d"} {
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), topologyObject(n)) })
	}
	// RBAC alone lets an agent write any node's zones.
	if err := agentC.Create(context.Background(), topologyObject("node-d")); err != nil {
		t.Fatalf("without the policy, agent C creating NodeResourceTopology node-d: want it allowed (RBAC alone), got %v", err)
	}
	install(t, e, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	testenv.Eventually(t, "the policy refuses agent C's update of NodeResourceTopology node-d", func() error {
		u := nrt.New()
		if err := agentC.Get(context.Background(), client.ObjectKey{Name: "node-d"}, u); err != nil {
			return err
		}
		return expectRefused(agentC.Update(context.Background(), u), "gleaner-agent on node node-c may write only NodeResourceTopology node-c, not node-d")
	})
	if err := expectRefused(unbound.Create(context.Background(), topologyObject("node-c")),
		"gleaner-agent may write a NodeResourceTopology only with a service-account token bound to a pod on a node"); err != nil {
		t.Errorf("a token bound to no pod: %v", err)
	}
	own := topologyObject("node-c")
	if err := agentC.Create(context.Background(), own); err != nil {
		t.Fatalf("agent C creating its own NodeResourceTopology: %v", err)
	}
	if err := agentC.Update(context.Background(), own); err != nil {
		t.Errorf("agent C updating its own NodeResourceTopology: %v", err)
	}
}

// topologyObject is a NodeResourceTopology of one NUMA zone.
func topologyObject(node string) *unstructured.Unstructured {
	u := nrt.New()
	u.SetName(node)
	u.Object["zones"] = []any{map[string]any{"name": "node-0", "type": nrt.ZoneTypeNode, "resources": []any{
		nrt.ResourceMap(nrt.ResourceInfo{Name: "cpu", Capacity: resource.MustParse("8"), Allocatable: resource.MustParse("8"), Available: resource.MustParse("8")}),
	}}}
	return u
}

// TestLocalClusterInstallsThePolicy: the local cluster (config/local, applied by gleaner-local deploy) installs the
// policy too, since it builds on config/default.
func TestLocalClusterInstallsThePolicy(t *testing.T) {
	e := env.Start(t)
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if len(only(render(t, e, "../local"), kind)) != 1 {
			t.Errorf("config/local does not install the %s %s", kind, policy)
		}
	}
}

// render returns the objects `kubectl kustomize dir` renders, with the kubectl of the API server's release.
func render(t *testing.T, e *testenv.Env, dir string) []*unstructured.Unstructured {
	t.Helper()
	var stderr bytes.Buffer
	cmd := e.Kubectl("kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding the output of kubectl kustomize %s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// only returns the objects of a kind that belong to the agent, the manager or the policy: those this test needs.
func only(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		switch o.GetName() {
		case namespace, agentSA, managerSA, policy:
			out = append(out, o)
		}
	}
	return out
}

// install creates the rendered objects of these kinds (see only) and deletes them when the test ends; a kind the
// render lacks fails the test.
func install(t *testing.T, e *testenv.Env, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		found := only(objs, kind)
		if len(found) == 0 {
			t.Fatalf("config/default renders no %s for gleaner (want %s, %s or %s)", kind, agentSA, managerSA, policy)
		}
		for _, o := range found {
			o = o.DeepCopy()
			if err := e.Client.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating %s %s: %v", kind, o.GetName(), err)
			}
			if kind != "Namespace" { // envtest never finishes deleting a namespace: it runs no namespace controller
				t.Cleanup(func() { _ = e.Client.Delete(context.Background(), o) })
			}
		}
	}
}

// agentClient is the agent of a new node: a node, a pod of the agent's service account on it, and a client with
// a token bound to that pod, as the kubelet mounts it.
func agentClient(t *testing.T, e *testenv.Env, cs kubernetes.Interface, node string) client.Client {
	t.Helper()
	e.CreateNode(t, testutil.Node(node).Capacity("cpu", "8", "memory", "16Gi").Allocatable("cpu", "8", "memory", "16Gi").Obj())
	pod := testutil.Pod("gleaner-agent-" + node).Namespace(namespace).Node(node).Container("agent").Image("gleaner.local/gleaner-agent:dev").Obj()
	pod.Spec.ServiceAccountName = agentSA
	pod = e.CreatePod(t, pod)
	return tokenClient(t, e, requestToken(t, cs, agentSA, &authenticationv1.BoundObjectReference{
		Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
	}))
}

// requestToken asks the TokenRequest API for a token of a service account in gleaner-system, bound to ref when it
// is not nil.
func requestToken(t *testing.T, cs kubernetes.Interface, sa string, ref *authenticationv1.BoundObjectReference) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: ref},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s: %v", sa, err)
	}
	return tr.Status.Token
}

// tokenClient is a client of the API server that authenticates with token alone.
func tokenClient(t *testing.T, e *testenv.Env, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeReport patches the status of a node's NodeMetric with a node usage of cpu, as the agent's reporter does.
func writeReport(c client.Client, node, cpu string) error {
	ctx := context.Background()
	nm := &slov1alpha1.NodeMetric{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, nm); err != nil {
		return fmt.Errorf("reading NodeMetric %s: %w", node, err)
	}
	orig := nm.DeepCopy()
	nm.Status = testutil.NodeMetric(node).Updated(metav1.Now().Time).NodeUsage("cpu", cpu, "memory", "1Gi").Obj().Status
	return c.Status().Patch(ctx, nm, client.MergeFrom(orig))
}

// expectRefused returns nil when err is the API server's Forbidden with msg in its message.
func expectRefused(err error, msg string) error {
	switch {
	case err == nil:
		return errors.New("the write was allowed")
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), msg):
		return fmt.Errorf("want Forbidden saying %q, got %w", msg, err)
	}
	return nil
}
