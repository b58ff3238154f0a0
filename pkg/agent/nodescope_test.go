package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// nodeScopeConfig is the optional API server authorization configuration that holds the agent to its node.
const nodeScopeConfig = "../../config/apiserver/agent-node-scope.yaml"

// scopedEnv is a control plane whose kube-apiserver authorizes with config/apiserver/agent-node-scope.yaml, as
// shipped but for the path of its kubeconfig.
var scopedEnv = newScopedEnv()

func newScopedEnv() *testenv.Env {
	var dir string
	e := testenv.New(testenv.WithAPIServerArgs(func(args *envtest.Arguments) error {
		var err error
		if dir, err = os.MkdirTemp("", "gleaner-node-scope-"); err != nil {
			return err
		}
		cfg, err := os.ReadFile(nodeScopeConfig)
		if err != nil {
			return err
		}
		kc, err := os.ReadFile(filepath.Join(filepath.Dir(nodeScopeConfig), "agent-node-scope.kubeconfig"))
		if err != nil {
			return err
		}
		const shippedPath = "/etc/kubernetes/gleaner/agent-node-scope.kubeconfig"
		if !strings.Contains(string(cfg), shippedPath) {
			return fmt.Errorf("%s does not name %s", nodeScopeConfig, shippedPath)
		}
		kcPath := filepath.Join(dir, "agent-node-scope.kubeconfig")
		cfg = []byte(strings.ReplaceAll(string(cfg), shippedPath, kcPath))
		if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "authorization.yaml"), cfg, 0o600); err != nil {
			return err
		}
		args.Disable("authorization-mode") // the two flags exclude each other
		args.Set("authorization-config", filepath.Join(dir, "authorization.yaml"))
		return nil
	}))
	e.OnStop(func() {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	})
	return e
}

// TestAgentUnderNodeScope runs the whole agent, with the RBAC of config/rbac and a token bound to its pod as the
// kubelet gives it, behind an API server that authorizes with config/apiserver/agent-node-scope.yaml: it syncs
// and reports as usual, and the same token can no longer read or write anything of another node. Under RBAC
// alone (the package's other API server) that token lists every pod of the cluster.
func TestAgentUnderNodeScope(t *testing.T) {
	const node, other = "scoped-node", "scoped-other"
	// RBAC alone: the agent's token reads every pod.
	plain := env.Start(t)
	applyAgentRBAC(t, plain)
	plain.CreateNode(t, testutil.Node("plain-other").Obj())
	plain.CreatePod(t, testutil.Pod("plain-other-pod").Namespace("default").Node("plain-other").Container("c").Obj())
	if err := agentClient(t, plain, plain.ServiceAccountToken(t, "gleaner-system", "gleaner-agent", nil)).List(context.Background(), &corev1.PodList{}); err != nil {
		t.Fatalf("under RBAC alone the agent's token should list every pod (the reason for the scope): %v", err)
	}

	e := scopedEnv.Start(t)
	ctx := context.Background()
	applyAgentRBAC(t, e)
	host, _, _ := simulatedHost(t, e, node)
	e.CreateNode(t, testutil.Node(other).Obj())
	otherPod := e.CreatePod(t, testutil.Pod("other-pod").Namespace("default").Node(other).Container("c").Obj())
	create(t, e.Client, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: other}})
	agentPod := testutil.Pod("gleaner-agent-scoped").Namespace("gleaner-system").Node(node).Container("agent").Obj()
	agentPod.Spec.ServiceAccountName = "gleaner-agent"
	agentPod = e.CreatePod(t, agentPod)
	token := e.ServiceAccountToken(t, "gleaner-system", "gleaner-agent", agentPod)

	// The whole agent works within its node.
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	o := NewOptions()
	o.NodeName, o.ProcRoot, o.SysRoot, o.CgroupRoot = node, host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), t.TempDir()
	o.MetricsAddr, o.HealthAddr = "0", freeAddr(t)
	a, done := startAgent(t, e.TokenConfig(token), o, clk)
	reportAfter(t, e, done, a, host, clk, node)

	// Beyond it, nothing.
	sa := agentClient(t, e, token)
	onOther := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", other)}
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: other}}
	for what, err := range map[string]error{
		"list every pod":                 sa.List(ctx, &corev1.PodList{}),
		"list the other node's pods":     sa.List(ctx, &corev1.PodList{}, onOther),
		"get a pod":                      sa.Get(ctx, client.ObjectKeyFromObject(otherPod), &corev1.Pod{}),
		"get the other node":             sa.Get(ctx, client.ObjectKey{Name: other}, &corev1.Node{}),
		"list every node":                sa.List(ctx, &corev1.NodeList{}),
		"get the other NodeMetric":       sa.Get(ctx, client.ObjectKey{Name: other}, &slov1alpha1.NodeMetric{}),
		"list every NodeSLO":             sa.List(ctx, &slov1alpha1.NodeSLOList{}),
		"patch the other NodeMetric":     sa.Status().Patch(ctx, nm, client.RawPatch("application/merge-patch+json", []byte(`{"status":{}}`))),
		"list its pods without its node": agentClient(t, e, e.ServiceAccountToken(t, "gleaner-system", "gleaner-agent", nil)).List(ctx, &corev1.PodList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", node)}),
	} {
		if !refusedByScope(err) {
			t.Errorf("%s as the agent of %s: want the scope's refusal, got %v", what, node, err)
		}
	}
	// Its own pods it lists; another node's kubelet would not give it that node's pods (the kubelet asks the API
	// server the same question for GET /pods).
	if err := sa.List(ctx, &corev1.PodList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", node)}); err != nil {
		t.Errorf("listing its own node's pods: %v", err)
	}
	for n, want := range map[string]bool{node: true, other: false} {
		if got := kubeletAllows(t, e, token, n); got != want {
			t.Errorf("nodes/pods of %s for the agent of %s: allowed %v, want %v", n, node, got, want)
		}
	}
}

// refusedByScope reports whether err is the node scope's refusal. The scope's authorizer denies by failing to
// reach its webhook (failurePolicy Deny), and the API server answers a denial that comes with an error as an
// internal error (500) naming it, not as 403: nothing is served either way (docs/security.md).
func refusedByScope(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "https://127.0.0.1:0/") && strings.Contains(err.Error(), "connection refused")
}

// applyAgentRBAC installs the agent's service account, binding and ClusterRole.
func applyAgentRBAC(t *testing.T, e *testenv.Env) {
	t.Helper()
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	files := []string{"apply"}
	for _, f := range rbacManifests {
		files = append(files, "-f", f)
	}
	if out, err := e.Kubectl(files...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", files, err, out)
	}
}

func agentClient(t *testing.T, e *testenv.Env, token string) client.Client {
	t.Helper()
	c, err := client.New(e.TokenConfig(token), client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kubeletAllows asks the API server what a kubelet asks before it serves GET /pods to the holder of token: who
// is this (TokenReview), and may that user, with its token's extra, get nodes/pods of node (SubjectAccessReview).
func kubeletAllows(t *testing.T, e *testenv.Env, token, node string) bool {
	t.Helper()
	ctx := context.Background()
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := e.Client.Create(ctx, tr); err != nil || !tr.Status.Authenticated {
		t.Fatalf("the API server does not authenticate the agent's token: %v %+v", err, tr.Status)
	}
	u := tr.Status.User
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: map[string]authorizationv1.ExtraValue{},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "pods", Name: node},
	}}
	for k, v := range u.Extra {
		review.Spec.Extra[k] = authorizationv1.ExtraValue(v)
	}
	if err := e.Client.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}
