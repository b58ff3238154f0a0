package main

import (
	"os/exec"
	"strings"
	"testing"
)

// managerSide are packages that belong to gleaner-manager or the CLI. The agent runs on every node, so each of
// them would cost memory on every node (the embedded CRDs and apiextensions alone are megabytes), and none is
// needed there: the strategy defaults the agent applies live in the API package.
var managerSide = []struct{ path, why string }{
	{"github.com/gleaner-sh/gleaner/pkg/sloconfig", "the manager's ConfigMap parser"},
	{"github.com/gleaner-sh/gleaner/config/crd", "the embedded CRD manifests"},
	{"k8s.io/apiextensions-apiserver/", "the CRD API types"},
	{"github.com/gleaner-sh/gleaner/pkg/controllers/", "the manager's controllers"},
	{"github.com/gleaner-sh/gleaner/pkg/manager", "the manager's wiring"},
	{"github.com/gleaner-sh/gleaner/pkg/webhook", "the manager's webhooks"},
	{"github.com/gleaner-sh/gleaner/pkg/allocation", "kubectl's allocation accounting"},
	{"github.com/gleaner-sh/gleaner/pkg/cli", "kubectl-glean"},
	{"k8s.io/cli-runtime/", "kubectl's flags and printers"},
	{"k8s.io/apiserver/", "the API server's libraries, which controller-runtime's metrics filter brings (30 MB of binary); pkg/serving asks the same TokenReview and SubjectAccessReview with client-go"},
}

// TestAgentHasNoManagerSideDependencies fails when cmd/gleaner-agent imports, directly or not, a package of the
// manager's side.
func TestAgentHasNoManagerSideDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages; expected the agent's whole dependency tree", len(deps))
	}
	for _, dep := range deps {
		for _, m := range managerSide {
			if dep == m.path || (strings.HasSuffix(m.path, "/") && strings.HasPrefix(dep, m.path)) || strings.HasPrefix(dep, m.path+"/") {
				t.Errorf("gleaner-agent depends on %s (%s); keep manager-side code out of the agent", dep, m.why)
			}
		}
	}
}

// The agent's layering: packages of one side never import the other's, directly or not. The runtime hook and the
// QoS plugins share what both need (the batch and mid translation in pkg/agent/tier, the cgroup model) below them.
var apart = []struct{ a, b, why string }{
	{"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook", "github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins",
		"the runtime hook and the QoS plugins never import each other; what both need lives below them (pkg/agent/tier, pkg/agent/system/cgroup)"},
}

// TestLayersDoNotImportEachOther fails when a package under one path of a pair depends on a package under the other.
func TestLayersDoNotImportEachOther(t *testing.T) {
	under := func(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }
	for _, p := range apart {
		for _, dir := range [][2]string{{p.a, p.b}, {p.b, p.a}} {
			out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, dir[0]+"/...").Output()
			if err != nil {
				t.Fatalf("go list -deps %s/...: %v", dir[0], err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) < 2 {
				t.Fatalf("go list -deps %s/... listed %d packages; expected the packages and their dependencies", dir[0], len(lines))
			}
			for _, line := range lines {
				f := strings.Fields(line)
				if len(f) == 0 || !under(f[0], dir[0]) {
					continue
				}
				for _, dep := range f[1:] {
					if under(dep, dir[1]) {
						t.Errorf("%s depends on %s: %s", f[0], dep, p.why)
					}
				}
			}
		}
	}
}
