package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// readValues reads a chart's values.yaml as YAML.
func readValues(t *testing.T, chart string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The copy of the real chart differs from it in image.registry alone, and the source is left as it was.
func TestCopyWithRegistry(t *testing.T) {
	src := filepath.Join("..", "..", "charts", "gleaner")
	before := readValues(t, src)
	dst := filepath.Join(t.TempDir(), "chart")
	if err := copyWithRegistry(src, dst, "127.0.0.1:5000/gleaner"); err != nil {
		t.Fatal(err)
	}
	got := readValues(t, dst)
	if r := got["image"].(map[string]any)["registry"]; r != "127.0.0.1:5000/gleaner" {
		t.Errorf("image.registry %v, want 127.0.0.1:5000/gleaner", r)
	}
	got["image"].(map[string]any)["registry"] = before["image"].(map[string]any)["registry"]
	if diff := cmp.Diff(before, got); diff != "" {
		t.Errorf("values other than image.registry changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before, readValues(t, src)); diff != "" {
		t.Errorf("the source chart changed:\n%s", diff)
	}
	for _, f := range []string{"Chart.yaml", "values.schema.json", filepath.Join("templates", "generated.yaml")} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
}

func TestCopyWithRegistryErrors(t *testing.T) {
	src := filepath.Join("..", "..", "charts", "gleaner")
	for _, bad := range []string{"", "registry with spaces", "host/path: x", "HOST/Upper"} {
		if err := copyWithRegistry(src, filepath.Join(t.TempDir(), "c"), bad); err == nil || !strings.Contains(err.Error(), "image registry") {
			t.Errorf("registry %q: %v, want an error naming it", bad, err)
		}
	}
	chart := t.TempDir()
	if err := os.WriteFile(filepath.Join(chart, "values.yaml"), []byte("manager:\n  image:\n    registry: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyWithRegistry(chart, filepath.Join(t.TempDir(), "c"), "example.com/gleaner"); err == nil || !strings.Contains(err.Error(), "no image.registry") {
		t.Errorf("values without a top-level image.registry: %v", err)
	}
	if err := copyWithRegistry(filepath.Join(chart, "missing"), filepath.Join(t.TempDir(), "c"), "example.com/gleaner"); err == nil {
		t.Error("a missing chart: no error")
	}
}

// A release with ImageRegistry packages a copy of the chart that has it, not the chart itself.
func TestReleaseChartWithRegistry(t *testing.T) {
	r := testRelease(t, t.TempDir(), platform{"linux", "amd64"})
	if err := os.WriteFile(filepath.Join(r.Chart, "values.yaml"), []byte("image:\n  registry: gleaner.local\n  pullPolicy: IfNotPresent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ImageRegistry = "registry.example.com/gleaner"
	var packaged map[string]any
	pkg := r.PackageChart
	r.PackageChart = func(ctx context.Context, chart, dir, chartVersion, appVersion string) error {
		if chart == r.Chart {
			t.Errorf("packaged the chart itself, not a copy with the registry")
		}
		packaged = readValues(t, chart)
		return pkg(ctx, chart, dir, chartVersion, appVersion)
	}
	if _, err := r.write(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"image": map[string]any{"registry": "registry.example.com/gleaner", "pullPolicy": "IfNotPresent"}}
	if diff := cmp.Diff(want, packaged); diff != "" {
		t.Errorf("the packaged chart's values (-want +got):\n%s", diff)
	}
}
