package cli

import (
	"context"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const gleanReaderRole = "../../config/rbac/glean_reader_role.yaml"

// TestGleanRunsWithTheReaderRole: a user bound to gleaner-glean-reader (config/rbac/glean_reader_role.yaml) can
// run every subcommand in every mode, and a user without it is told that the API server forbids it.
func TestGleanRunsWithTheReaderRole(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
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
	alice := e.UserKubeconfig(t, "alice", "system:authenticated")
	mallory := e.UserKubeconfig(t, "mallory", "system:authenticated")

	createExplained(t, e, "rbac-a", "1200")
	e.CreatePod(t, testutil.Pod("rbac-1").Namespace("default").Node("rbac-a").Requests("cpu", "500m").Obj())
	na := &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: "rbac-a"}}
	if err := e.Client.Create(ctx, na); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"nodes"}, {"nodes", "rbac-a"}, {"nodes", "--live"}, {"nodes", "rbac-a", "--pods", "-o", "wide"}, {"nodes", "--pods", "-o", "json"},
		{"explain", "rbac-a"},
	} {
		out, errOut, err := glean(t, append([]string{"--kubeconfig", alice}, args...)...)
		if err != nil || strings.Contains(errOut, "forbidden") {
			t.Errorf("kubectl glean %v as a reader: %v\nstderr: %s", args, err, errOut)
			continue
		}
		if !strings.Contains(out, "rbac-a") {
			t.Errorf("kubectl glean %v as a reader does not show the node:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"nodes"}, {"explain", "rbac-a"}} {
		_, _, err := glean(t, append([]string{"--kubeconfig", mallory}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("kubectl glean %v without the role: want the API server's refusal, got %v", args, err)
		}
	}
}

// TestGleanReaderRoleOnlyReads: the role grants nothing but reading.
func TestGleanReaderRoleOnlyReads(t *testing.T) {
	b, err := os.ReadFile(gleanReaderRole)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
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
	}
}
