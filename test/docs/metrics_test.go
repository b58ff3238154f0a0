package docs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/internal/metricsref"
)

// TestMetricsReferenceIsCurrent: docs/metrics.md is what internal/metricsref renders from the metrics the binaries
// register, so that a metric added, renamed or changed in the code without the page fails here.
func TestMetricsReferenceIsCurrent(t *testing.T) {
	fs, err := metricsref.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	want := string(metricsref.Markdown(fs))
	got, err := os.ReadFile(filepath.Join("..", "..", metricsref.DocPath))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is not what the code registers; `go run ./hack/metrics-doc > %s` writes it (-want +got):\n%s",
			metricsref.DocPath, metricsref.DocPath, diff)
	}
}
