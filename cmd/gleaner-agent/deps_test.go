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
