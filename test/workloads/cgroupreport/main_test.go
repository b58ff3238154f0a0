package main

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, root, rel, v string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReport(t *testing.T) {
	v1 := t.TempDir()
	write(t, v1, "cpu/cpu.shares", "2048\n")
	write(t, v1, "cpu/cpu.cfs_quota_us", "200000\n")
	write(t, v1, "cpu/cpu.cfs_period_us", "100000\n")
	if got, want := report(v1), "shares=2048 quota=200000 period=100000 memory=?"; got != want {
		t.Errorf("v1: %q, want %q", got, want)
	}
	v2 := t.TempDir()
	write(t, v2, "cgroup.controllers", "cpu memory\n")
	write(t, v2, "cpu.weight", "79\n")
	write(t, v2, "cpu.max", "200000 100000\n")
	write(t, v2, "memory.max", "max\n")
	if got, want := report(v2), "weight=79 max=200000/100000 memory=max"; got != want {
		t.Errorf("v2: %q, want %q", got, want)
	}
}
