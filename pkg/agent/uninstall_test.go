package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// generatedAgentRole is the agent's namespaced Role as `make generate` writes it from the RBAC markers.
func generatedAgentRole(t *testing.T) *rbacv1.Role {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "agent", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "Role" && r.Namespace == "gleaner-system" {
			return &r
		}
	}
	t.Fatal("config/rbac/agent/role.yaml has no Role in gleaner-system")
	return nil
}

// The check against a real API server, as the agent's service account with the generated RBAC: the DaemonSet in
// place is a restart; being deleted, gone, the RBAC gone and the service account unknown are an uninstall; an API
// server that does not answer is neither, and leaves the node alone.
func TestDaemonSetCheck(t *testing.T) {
	e := env.Start(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(e.Config)
	// A namespace of the test's own, as the release's would be: the generated Role is for gleaner-system.
	created, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "uninstall-check-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := created.Name
	role := generatedAgentRole(t)
	role.Namespace = ns
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gleaner-agent", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gleaner-agent"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "gleaner-agent", Namespace: ns}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "gleaner-agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "gleaner-agent", Namespace: ns, Finalizers: []string{"test.gleaner.sh/hold"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "gleaner.local/gleaner-agent:dev"}}},
			},
		},
	}
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := e.UserConfig("system:serviceaccount:"+ns+":gleaner-agent", "system:serviceaccounts", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer reads RBAC through its own informers: a binding created or deleted a moment ago
	// may not be seen yet, so each step is asked again until it answers as expected, for up to 10 s.
	expect := func(cfg *rest.Config, want bool, reason string) {
		t.Helper()
		check, err := daemonSetCheck(cfg, ns, "gleaner-agent")
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		var why string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if got, why = check(ctx); got == want && strings.Contains(why, reason) || time.Now().After(deadline) {
				break
			}
		}
		if got != want || !strings.Contains(why, reason) {
			t.Errorf("check: %v (%s), want %v saying %q", got, why, want, reason)
		}
	}

	expect(sa, false, "is in place")
	if err := cs.AppsV1().DaemonSets(ns).Delete(ctx, "gleaner-agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(sa, true, "is being deleted")
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := cs.AppsV1().DaemonSets(ns).Patch(ctx, "gleaner-agent", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(sa, true, "is gone")
	if err := cs.RbacV1().RoleBindings(ns).Delete(ctx, "gleaner-agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(sa, true, "may no longer read")
	expect(e.TokenConfig("not-a-token"), true, "no longer knows")
	expect(&rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second}, false, "leaving the node as it is")
}

// offPlugin records whether it ran with everything off (the BE class's CPU QoS off), and fails when told to.
type offPlugin struct {
	ranOff bool
	err    error
}

func (p *offPlugin) Name() string { return "off" }

func (p *offPlugin) Run(_ context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	p.ranOff = !*spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable
	return p.err
}

// restoreAgent is an agent with only a QoS manager of one offPlugin and a state directory holding a file.
func restoreAgent(t *testing.T, p *offPlugin) *Agent {
	t.Helper()
	qos, err := qosmanager.NewManager(qosmanager.Deps{States: statesinformer.NewStore()}, clocktesting.NewFakeClock(time.Now()),
		[]qosmanager.Factory{{Name: "off", Default: true, New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.StateDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(o.StateDir, "sysreconcile.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Agent{QoS: qos, opts: o}
}

// stateFiles lists what the agent's state directory holds.
func stateFiles(t *testing.T, a *Agent) int {
	t.Helper()
	entries, err := os.ReadDir(a.opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// On an uninstall the plugins run with everything off and the state directory is emptied; on a restart nothing
// happens; a plugin that fails keeps the state directory (its originals) and makes the error; with the option off,
// or no check, nothing happens either.
func TestRestoreOnUninstall(t *testing.T) {
	uninstall := func(context.Context) (bool, string) { return true, "DaemonSet gone" }
	restart := func(context.Context) (bool, string) { return false, "in place" }

	p := &offPlugin{}
	a := restoreAgent(t, p)
	if err := a.restoreOnUninstall(t.Context(), restart); err != nil || p.ranOff || stateFiles(t, a) != 1 {
		t.Errorf("restart: %v, plugin ran off %v, %d state files; want nothing done", err, p.ranOff, stateFiles(t, a))
	}
	if err := a.restoreOnUninstall(t.Context(), uninstall); err != nil || !p.ranOff || stateFiles(t, a) != 0 {
		t.Errorf("uninstall: %v, plugin ran off %v, %d state files; want restored and emptied", err, p.ranOff, stateFiles(t, a))
	}

	p = &offPlugin{err: errors.New("cgroup busy")}
	a = restoreAgent(t, p)
	err := a.restoreOnUninstall(t.Context(), uninstall)
	if err == nil || !strings.Contains(err.Error(), "cgroup busy") || !strings.Contains(err.Error(), "kept for another try") || stateFiles(t, a) != 1 {
		t.Errorf("failed restore: %v, %d state files; want the error and the state kept", err, stateFiles(t, a))
	}

	p = &offPlugin{}
	a = restoreAgent(t, p)
	a.opts.Uninstall.Restore = false
	if err := a.restoreOnUninstall(t.Context(), uninstall); err != nil || p.ranOff {
		t.Errorf("--restore-on-uninstall=false: %v, plugin ran off %v", err, p.ranOff)
	}
	a.opts.Uninstall.Restore = true
	if err := a.restoreOnUninstall(t.Context(), nil); err != nil || p.ranOff {
		t.Errorf("no check: %v, plugin ran off %v", err, p.ranOff)
	}
}
