package ci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// TestMakeRelease: `make release` for this machine's platform (the others cross-compile the Kubernetes client for
// minutes, and hack/release's tests cover their archives) writes an archive whose kubectl-glean is VERSION, a
// checksums.txt that sha256sum -c accepts, the chart packaged as VERSION without the v and app version VERSION, and
// a Krew manifest of the archive; and a second run writes the same archive and manifest, byte for byte.
func TestMakeRelease(t *testing.T) {
	for _, program := range []string{"make", "sha256sum"} {
		if _, err := exec.LookPath(program); err != nil {
			Skipf(t, "checking `make release` needs %s: %v", program, err)
		}
	}
	root := repoRoot(t)
	helm := helmForRelease(t, root)
	const want = "v1.2.3"
	release := func() string {
		t.Helper()
		dir := t.TempDir()
		cmd := exec.Command("make", "-C", root, "--no-print-directory", "release", "VERSION="+want, "RELEASE_DIR="+dir,
			"PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "HELM="+helm)
		cmd.Env = environWithout("MAKEFLAGS", "MAKELEVEL", "MFLAGS")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make release: %v\n%s", err, out)
		}
		return dir
	}
	dir := release()

	archive := fmt.Sprintf("kubectl-glean_%s_%s_%s.tar.gz", want, runtime.GOOS, runtime.GOARCH)
	artifacts := []string{archive, "checksums.txt", "gleaner-1.2.3.tgz", "glean.yaml"}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, slices.Sorted(slices.Values(artifacts))) {
		t.Fatalf("make release wrote %q, want %q", names, artifacts)
	}

	checkReleaseChecksums(t, dir, artifacts)
	checkReleaseArchive(t, root, dir, archive, want)
	checkReleaseChart(t, dir, want)
	checkReleaseManifest(t, dir, archive, want)

	// Reproducible: the same tree makes the same archive.
	again := release()
	for _, f := range []string{archive, "glean.yaml"} {
		if !bytes.Equal(readAll(t, filepath.Join(dir, f)), readAll(t, filepath.Join(again, f))) {
			t.Errorf("two runs of make release wrote different %s", f)
		}
	}
}

// checkReleaseChecksums: sha256sum -c accepts the release's checksums.txt, which checks every other artifact.
func checkReleaseChecksums(t *testing.T, dir string, artifacts []string) {
	t.Helper()
	cmd := exec.Command("sha256sum", "-c", "checksums.txt")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("sha256sum -c checksums.txt: %v\n%s", err, out)
	}
	for _, a := range artifacts {
		if a != "checksums.txt" && !strings.Contains(string(out), a+": OK") {
			t.Errorf("checksums.txt does not check %s:\n%s", a, out)
		}
	}
}

// checkReleaseArchive: the archive holds the plugin, which says it is version want, and the repository's license.
func checkReleaseArchive(t *testing.T, root, dir, archive, want string) {
	t.Helper()
	bin := t.TempDir()
	files := untar(t, filepath.Join(dir, archive), bin)
	if !slices.Equal(files, []string{"kubectl-glean", "LICENSE"}) {
		t.Errorf("%s holds %q, want kubectl-glean and LICENSE", archive, files)
	}
	if license, err := os.ReadFile(filepath.Join(root, "LICENSE")); err != nil || !bytes.Equal(license, readAll(t, filepath.Join(bin, "LICENSE"))) {
		t.Errorf("%s's LICENSE is not the repository's (%v)", archive, err)
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl-glean"), "version", "-o", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl-glean version -o json from %s: %v\n%s", archive, err, out)
	}
	var printed struct {
		ClientVersion version.Info `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &printed); err != nil || printed.ClientVersion.Version != want {
		t.Errorf("kubectl-glean from %s is version %q (%v), want %q:\n%s", archive, printed.ClientVersion.Version, err, want, out)
	}
}

// checkReleaseChart: the chart package's Chart.yaml has want without the v as its version, and want as appVersion.
func checkReleaseChart(t *testing.T, dir, want string) {
	t.Helper()
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	pkg := "gleaner-" + strings.TrimPrefix(want, "v") + ".tgz"
	if err := yaml.Unmarshal(tarFile(t, filepath.Join(dir, pkg), "gleaner/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != strings.TrimPrefix(want, "v") || chart.AppVersion != want {
		t.Errorf("%s's Chart.yaml has version %q and appVersion %q, want %s and %s", pkg, chart.Version, chart.AppVersion, strings.TrimPrefix(want, "v"), want)
	}
}

// checkReleaseManifest: the Krew manifest is of version want and names the archive at its release URL with the
// checksum checksums.txt has (hack/release's tests check it as Krew would).
func checkReleaseManifest(t *testing.T, dir, archive, want string) {
	t.Helper()
	var manifest struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readAll(t, filepath.Join(dir, "glean.yaml")), &manifest); err != nil {
		t.Fatal(err)
	}
	sums := string(readAll(t, filepath.Join(dir, "checksums.txt")))
	if p := manifest.Spec.Platforms; manifest.Spec.Version != want || len(p) != 1 ||
		p[0].URI != "https://github.com/gleaner-sh/gleaner/releases/download/"+want+"/"+archive || !strings.Contains(sums, p[0].SHA256+"  "+archive+"\n") {
		t.Errorf("glean.yaml does not name %s at its release URL with the checksum of checksums.txt:\n%s\n%s", archive, readAll(t, filepath.Join(dir, "glean.yaml")), sums)
	}
}

// helmForRelease is the helm `make release` runs: $GLEANER_HELM (make unit sets it), else hack/tool.sh's.
func helmForRelease(t *testing.T, root string) string {
	t.Helper()
	if h := os.Getenv("GLEANER_HELM"); h != "" {
		return h
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), "helm")
	cmd.Stderr = io.MultiWriter(os.Stderr, &stderr) // says that it builds, and how long that takes
	out, err := cmd.Output()
	if err != nil {
		Skipf(t, "packaging the chart needs helm, which hack/tool.sh cannot build: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// untar extracts the regular files of a .tar.gz into dir with their modes and returns their names in order.
func untar(t *testing.T, archive, dir string) []string {
	t.Helper()
	var names []string
	eachTarFile(t, archive, func(h *tar.Header, r io.Reader) {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(h.Name)), b, os.FileMode(h.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	})
	return names
}

// tarFile is the content of the file name in a .tar.gz.
func tarFile(t *testing.T, archive, name string) []byte {
	t.Helper()
	var content []byte
	eachTarFile(t, archive, func(h *tar.Header, r io.Reader) {
		if h.Name == name {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			content = b
		}
	})
	if content == nil {
		t.Fatalf("%s has no %s", archive, name)
	}
	return content
}

func eachTarFile(t *testing.T, archive string, f func(*tar.Header, io.Reader)) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(readAll(t, archive)))
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if h.Typeflag == tar.TypeReg {
			f(h, tr)
		}
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
