package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const gleanReaderRole = "../../config/rbac/glean_reader_role.yaml"

// TestGleanRunsWithTheReaderRole: a user bound to gleaner-glean-reader (config/rbac/glean_reader_role.yaml) can
// run every subcommand in every mode, and a user without it is told that the API server forbids it.
func TestGleanRunsWithTheReaderRole(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	ensureNamespace(t, e, defaultManagerNamespace) // of the Role gleaner-glean-config-reader
	if out, err := e.Kubectl("apply", "-f", gleanReaderRole).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", gleanReaderRole, err, out)
	}
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-f", gleanReaderRole).Run() })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gleaner-glean-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), binding) })
	// As the role's file says to bind it: the ClusterRole, and the Role for slo-controller-config.
	configBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: defaultManagerNamespace, Name: "alice-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gleaner-glean-config-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	if err := e.Client.Create(ctx, configBinding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), configBinding) })
	alice := e.UserKubeconfig(t, "alice", "system:authenticated")
	mallory := e.UserKubeconfig(t, "mallory", "system:authenticated")

	createExplained(t, e, "rbac-a", "1200")
	e.CreatePod(t, testutil.Pod("rbac-1").Namespace("default").Node("rbac-a").Requests("cpu", "500m").Obj())
	na := &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: "rbac-a"}}
	if err := e.Client.Create(ctx, na); err != nil {
		t.Fatal(err)
	}

	createNodeMetric(t, e, testutil.NodeMetric("rbac-a").Updated(time.Now()).NodeUsage("cpu", "100m").Obj())

	for _, args := range [][]string{
		{"nodes"}, {"nodes", "rbac-a"}, {"nodes", "--live"}, {"nodes", "rbac-a", "--pods", "-o", "wide"}, {"nodes", "--pods", "-o", "json"},
		{"explain", "rbac-a"},
		{"top", "nodes"}, {"top", "nodes", "rbac-a", "-o", "wide"}, {"top", "pods", "-A", "-o", "wide"}, {"top", "pods", "rbac-1", "-o", "json"},
		{"check"}, {"check", "-o", "json"},
	} {
		out, errOut, err := glean(t, append([]string{"--kubeconfig", alice}, args...)...)
		// check says in its table what it could not read (NodeSLOs, DaemonSets), and goes on.
		if err != nil || strings.Contains(errOut, "forbidden") || strings.Contains(out, "forbidden") {
			t.Errorf("kubectl glean %v as a reader: %v\nstderr: %s", args, err, errOut)
			continue
		}
		if !strings.Contains(out, "rbac-a") {
			t.Errorf("kubectl glean %v as a reader does not show the node:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"nodes"}, {"explain", "rbac-a"}, {"top", "nodes"}, {"top", "pods"}, {"check"}} {
		_, _, err := glean(t, append([]string{"--kubeconfig", mallory}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("kubectl glean %v without the role: want the API server's refusal, got %v", args, err)
		}
	}
}

// ensureNamespace creates namespace ns unless it exists (envtest has only default, kube-system and kube-public).
func ensureNamespace(t *testing.T, e *testenv.Env, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestGleanConfigReaderRole: `glean top` reads slo-controller-config for degradeTimeMinutes with the namespaced
// Role gleaner-glean-config-reader; without it, it warns and uses the default.
func TestGleanConfigReaderRole(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	ensureNamespace(t, e, defaultManagerNamespace)
	if out, err := e.Kubectl("apply", "-f", gleanReaderRole).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", gleanReaderRole, err, out)
	}
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-f", gleanReaderRole).Run() })
	cluster := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gleaner-glean-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}},
	}
	if err := e.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), cluster) })
	carol := e.UserKubeconfig(t, "carol", "system:authenticated")
	e.CreateNode(t, testutil.Node("rbac-config").Allocatable("cpu", "1").Obj())

	_, errOut, err := glean(t, "--kubeconfig", carol, "top", "nodes", "rbac-config")
	if err != nil || !strings.Contains(errOut, "cannot read ConfigMap gleaner-system/slo-controller-config (forbidden: bind the Role gleaner-glean-config-reader)") {
		t.Errorf("without the Role: err %v, stderr %q", err, errOut)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: defaultManagerNamespace, Name: "carol-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gleaner-glean-config-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}},
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), binding) })
	testenv.Eventually(t, "carol reads the config", func() error {
		_, errOut, err := glean(t, "--kubeconfig", carol, "top", "nodes", "rbac-config")
		if err != nil {
			return err
		}
		if strings.Contains(errOut, "forbidden") {
			return fmt.Errorf("still forbidden: %s", errOut)
		}
		return nil
	})
}

// TestGleanReaderRoleOnlyReads: the roles grant nothing but reading, and the namespaced one only the two
// ConfigMaps.
func TestGleanReaderRoleOnlyReads(t *testing.T) {
	b, err := os.ReadFile(gleanReaderRole)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%s: want the ClusterRole and the Role, got %d documents", gleanReaderRole, len(docs))
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("gleaner-glean-reader grants %s on %v: it only reads", v, r.Resources)
			}
		}
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 || strings.Contains(strings.Join(r.Resources, ","), "*") {
			t.Errorf("gleaner-glean-reader: an unexpected rule %+v", r)
		}
		if slices.Contains(r.Resources, "configmaps") || slices.Contains(r.Resources, "secrets") {
			t.Errorf("gleaner-glean-reader grants %v cluster-wide", r.Resources)
		}
	}
	config := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), config); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{defaultSLOConfigName, defaultSLOConfigName + "-last-good"}, Verbs: []string{"get"}}}
	if config.Name != "gleaner-glean-config-reader" || config.Namespace != defaultManagerNamespace || !cmp.Equal(config.Rules, want) {
		t.Errorf("gleaner-glean-config-reader: %+v", config)
	}
}

// TestExplainWithoutNodeSLOAccess: a user bound to a reader role of an earlier release (no get on nodeslos) still
// gets the derivation; explain warns that the NodeSLO's status is left out instead of claiming the agent has not
// written it.
func TestExplainWithoutNodeSLOAccess(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "glean-reader-without-nodeslos"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{slov1alpha1.GroupVersion.Group}, Resources: []string{"noderesourceexplanations"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dave-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "dave"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), o) })
	}
	dave := e.UserKubeconfig(t, "dave", "system:authenticated")
	createExplained(t, e, "rbac-old-role", "1200")
	createNodeSLO(t, e, "rbac-old-role", notApplied())

	var out, errOut string
	testenv.Eventually(t, "dave may read the node", func() error {
		var err error
		out, errOut, err = glean(t, "--kubeconfig", dave, "explain", "rbac-old-role")
		return err
	})
	if want := "warning: node rbac-old-role: its NodeSLO's status is left out: reading NodeSLOs is forbidden (bind the ClusterRole gleaner-glean-reader of this release, which grants get on nodeslos)\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.Contains(out, "Node rbac-old-role: published") || strings.Contains(out, "NodeSLO") {
		t.Errorf("want the derivation and nothing of the NodeSLO:\n%s", out)
	}
}

// TestCheckWithAnEarlierReaderRole: a user whose role lacks list on nodeslos and daemonsets (a reader role of an
// earlier release) gets every other check, and a line saying what was not checked, instead of an error.
func TestCheckWithAnEarlierReaderRole(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "glean-reader-without-check"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{slov1alpha1.GroupVersion.Group}, Resources: []string{"nodeslos"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "erin-glean"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "erin"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), o) })
	}
	erin := e.UserKubeconfig(t, "erin", "system:authenticated")
	n := testutil.Node("rbac-check").Label("check", "rbac").Obj()
	n.Status.NodeInfo = corev1.NodeSystemInfo{KernelVersion: "6.8.0-45-generic", ContainerRuntimeVersion: "containerd://2.1.4",
		KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64"}
	e.CreateNode(t, n)

	var out string
	testenv.Eventually(t, "erin may list nodes", func() error {
		var err error
		out, _, err = glean(t, "--kubeconfig", erin, "check", "-l", "check=rbac")
		return err
	})
	for _, want := range []string{
		"koordinator    cluster      info      no *.koordinator.sh API group; koordlet DaemonSets not looked for: listing DaemonSets is forbidden\n",
		"nodeslo        cluster      warning   not checked: listing NodeSLOs is forbidden (bind the ClusterRole gleaner-glean-reader of this release, which grants list on nodeslos)\n",
		"kernel         rbac-check   ok        6.8.0-45-generic (cpu.idle needs 5.15)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
