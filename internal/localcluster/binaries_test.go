package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindPrograms(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(a, "kubelet"), 0o755},
		{filepath.Join(b, "kubelet"), 0o755}, // the first directory wins
		{filepath.Join(b, "etcd"), 0o755},
		{filepath.Join(b, "ctr"), 0o644}, // not executable
	} {
		if err := os.WriteFile(f.path, nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findPrograms([]string{a, b}, []string{"kubelet", "etcd"})
	if err != nil {
		t.Fatal(err)
	}
	want := binaries{"kubelet": filepath.Join(a, "kubelet"), "etcd": filepath.Join(b, "etcd")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findPrograms (-want +got):\n%s", diff)
	}
	_, err = findPrograms([]string{a, b}, []string{"kubelet", "ctr", "containerd"})
	if err == nil || !strings.Contains(err.Error(), "no executable ctr, containerd in") {
		t.Errorf("findPrograms with missing programs = %v, want an error naming ctr and containerd", err)
	}
}

func TestBuildBinariesFailsClearly(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'kube-build: no network' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(root, "hack", "kube-build.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	_, err := buildBinaries(t.Context(), root, &progress)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("buildBinaries = %v, want the script's failure", err)
	}
	if !strings.Contains(progress.String(), "no network") {
		t.Errorf("the script's output %q did not reach the progress writer", progress.String())
	}
}
