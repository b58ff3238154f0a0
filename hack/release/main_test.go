package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testRelease is a release of v1.2.3 for platforms into out, of a chart and a license in a directory of the test,
// with stand-ins for go build (a binary naming its platform) and helm package (a package naming its versions).
func testRelease(t *testing.T, out string, platforms ...platform) release {
	t.Helper()
	src := t.TempDir()
	chart := filepath.Join(src, "chart")
	if err := os.MkdirAll(chart, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{filepath.Join(chart, "Chart.yaml"): "apiVersion: v2\nname: gleaner\nversion: 0.1.0\n", filepath.Join(src, "LICENSE"): "Apache License\n"} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return release{
		Options: Options{
			Version:    "v1.2.3",
			Platforms:  platforms,
			OutDir:     out,
			ReleaseURL: "https://example.com/download/v1.2.3",
			MTime:      time.Date(2026, 12, 2, 4, 11, 21, 0, time.UTC),
			License:    filepath.Join(src, "LICENSE"),
			Chart:      chart,
		},
		Build: func(_ context.Context, p platform, bin string) error {
			return os.WriteFile(bin, []byte("kubectl-glean for "+p.String()), 0o755)
		},
		PackageChart: func(_ context.Context, _, dir, chartVersion, appVersion string) error {
			return os.WriteFile(filepath.Join(dir, "gleaner-"+chartVersion+".tgz"), []byte("chart "+chartVersion+" app "+appVersion), 0o644)
		},
	}
}

var allPlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}

func TestRelease(t *testing.T) {
	out := t.TempDir()
	// An earlier release's artifacts, which go, and a file of someone else's, which stays.
	for _, f := range []string{"kubectl-glean_v1.2.2_linux_amd64.tar.gz", "kubectl-glean_v1.2.2_windows_amd64.zip", "gleaner-1.2.2.tgz", "glean.yaml", "checksums.txt", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(out, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, err := testRelease(t, out, allPlatforms...).write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kubectl-glean_v1.2.3_linux_amd64.tar.gz", "kubectl-glean_v1.2.3_linux_arm64.tar.gz",
		"kubectl-glean_v1.2.3_darwin_amd64.tar.gz", "kubectl-glean_v1.2.3_darwin_arm64.tar.gz",
		"kubectl-glean_v1.2.3_windows_amd64.zip", "gleaner-1.2.3.tgz", "glean.yaml", "checksums.txt",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	dir, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var inDir []string
	for _, e := range dir {
		inDir = append(inDir, e.Name())
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(append(want, "notes.txt"))), inDir); diff != "" {
		t.Errorf("files in the release directory (-want +got):\n%s", diff)
	}

	// Each archive holds its platform's binary and the license.
	for _, p := range allPlatforms {
		name := archiveName("v1.2.3", p)
		got := readArchive(t, name, readFile(t, filepath.Join(out, name)))
		mtime := time.Date(2026, 12, 2, 4, 11, 21, 0, time.UTC)
		wantEntries := []entry{
			{Name: binaryName(p), Mode: 0o755, MTime: mtime, Data: "kubectl-glean for " + p.String()},
			{Name: "LICENSE", Mode: 0o644, MTime: mtime, Data: "Apache License\n"},
		}
		if diff := cmp.Diff(wantEntries, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if got := string(readFile(t, filepath.Join(out, "gleaner-1.2.3.tgz"))); got != "chart 1.2.3 app v1.2.3" {
		t.Errorf("the chart was packaged as %q, want chart version 1.2.3 and app version v1.2.3", got)
	}

	// checksums.txt: every other artifact, sha256sum's format.
	var wantSums strings.Builder
	for _, n := range slices.Sorted(slices.Values(want[:len(want)-1])) {
		fmt.Fprintf(&wantSums, "%s  %s\n", sum(t, filepath.Join(out, n)), n)
	}
	if diff := cmp.Diff(wantSums.String(), string(readFile(t, filepath.Join(out, "checksums.txt")))); diff != "" {
		t.Errorf("checksums.txt (-want +got):\n%s", diff)
	}

	// glean.yaml: Krew takes it, with the archives it names.
	archives := map[string][]byte{}
	for _, n := range want[:5] {
		archives[n] = readFile(t, filepath.Join(out, n))
	}
	manifest := readFile(t, filepath.Join(out, "glean.yaml"))
	if problems := krewProblems(t, "glean.yaml", manifest, archives); len(problems) > 0 {
		t.Errorf("Krew would refuse glean.yaml:\n%s\n%s", strings.Join(problems, "\n"), manifest)
	}
	if !strings.Contains(string(manifest), "uri: https://example.com/download/v1.2.3/kubectl-glean_v1.2.3_windows_amd64.zip\n") {
		t.Errorf("glean.yaml names no archive at the release URL:\n%s", manifest)
	}
}

// TestReleaseIsReproducible: two releases of the same binaries are the same bytes but for the chart, which helm
// packages.
func TestReleaseIsReproducible(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	var names []string
	for _, out := range []string{a, b} {
		n, err := testRelease(t, out, allPlatforms...).write(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		names = n
	}
	for _, n := range names {
		if sa, sb := sum(t, filepath.Join(a, n)), sum(t, filepath.Join(b, n)); sa != sb {
			t.Errorf("%s differs between two releases of the same files: %s, %s", n, sa, sb)
		}
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	s := sha256.Sum256(readFile(t, path))
	return hex.EncodeToString(s[:])
}

func TestReleaseFailures(t *testing.T) {
	t.Run("build fails", func(t *testing.T) {
		r := testRelease(t, t.TempDir(), platform{"linux", "amd64"})
		r.Build = func(context.Context, platform, string) error { return fmt.Errorf("compiler on fire") }
		if _, err := r.write(context.Background()); err == nil || !strings.Contains(err.Error(), "compiler on fire") {
			t.Errorf("error %v, want the build's", err)
		}
	})
	t.Run("helm writes no package", func(t *testing.T) {
		r := testRelease(t, t.TempDir(), platform{"linux", "amd64"})
		r.PackageChart = func(context.Context, string, string, string, string) error { return nil }
		if _, err := r.write(context.Background()); err == nil || !strings.Contains(err.Error(), "wrote 0 packages") {
			t.Errorf("error %v, want one saying helm wrote no package", err)
		}
	})
	t.Run("version helm cannot take", func(t *testing.T) {
		r := testRelease(t, t.TempDir(), platform{"linux", "amd64"})
		r.Version = "main"
		if _, err := r.write(context.Background()); err == nil {
			t.Error("a release of version main: no error")
		}
	})
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--version", "v1.2.3", "--platforms", "linux/amd64 windows/amd64", "--source-date-epoch", "1796184681", "--out", "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Version:    "v1.2.3",
		Platforms:  []platform{{"linux", "amd64"}, {"windows", "amd64"}},
		OutDir:     "x",
		ReleaseURL: "https://github.com/gleaner-sh/gleaner/releases/download/v1.2.3",
		MTime:      time.Unix(1796184681, 0).UTC(),
		License:    "LICENSE",
		Chart:      "charts/gleaner",
		Package:    "./cmd/kubectl-glean",
		Helm:       "helm",
	}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	for _, args := range [][]string{
		{},                        // no version
		{"--version", "v1.2.3/x"}, // not a file name
		{"--version", "main"},     // not a version
		{"--version", "v1.2.3", "--platforms", "linux"},
		{"--version", "v1.2.3", "--source-date-epoch", "-1"},
		{"--version", "v1.2.3", "extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
}
