package testenv

import (
	_ "embed"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// topologyCRD is the NodeResourceTopology CRD, as topology-aware node agents and schedulers install it, trimmed to
// what Gleaner reads and writes (the rest of an object is preserved).
//
//go:embed crds/noderesourcetopology.yaml
var topologyCRD []byte

// InstallTopologyCRD installs the NodeResourceTopology CRD (topology.node.k8s.io/v1alpha2) and returns once the API
// server serves it. Installing it again is harmless.
func (e *Env) InstallTopologyCRD(t testing.TB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "noderesourcetopology.yaml")
	if err := os.WriteFile(path, topologyCRD, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing the NodeResourceTopology CRD: %v", err)
	}
}
