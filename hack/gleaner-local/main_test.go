package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindRepoRoot(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hack", "kube-build.sh"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	got, err := findRepoRoot()
	if err != nil || got != root {
		t.Errorf("findRepoRoot() = %q, %v; want %q", got, err, root)
	}
	t.Chdir(t.TempDir())
	if _, err := findRepoRoot(); err == nil || !strings.Contains(err.Error(), "--repo") {
		t.Errorf("outside the tree: %v, want an error pointing at --repo", err)
	}
}

func TestRunRejectsUnknownCommand(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "gl") // short: the state directory's socket paths must fit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	err = run(t.Context(), "frobnicate", options{stateDir: dir, repoRoot: filepath.Join("..", "..")})
	if err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("run(frobnicate) = %v", err)
	}
}
