package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProcessLifecycle(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sleep.log")
	p, err := startProcess("sleeper", "/bin/sh", []string{"-c", "echo started; exec sleep 60"}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop(context.Background(), time.Second) })
	// Wait for the exec to finish and sleep's first pages to be resident: while the shell's memory is replaced by
	// sleep's, /proc reads no RSS, and comm names sleep before the new program has faulted in a page (the test
	// failed three times there: after the echo, between two reads of RSS, and with comm already "sleep").
	comm := filepath.Join("/proc", strconv.Itoa(p.PID), "comm")
	for i := 0; i < 250 && (strings.TrimSpace(readString(comm)) != "sleep" || p.RSS() == 0); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	alive, rss := p.Alive(), p.RSS()
	if !alive || p.StartTime == 0 || rss == 0 {
		t.Fatalf("just started (comm %q): alive %t, start time %d, rss %d",
			strings.TrimSpace(readString(comm)), alive, p.StartTime, rss)
	}
	// The same PID with another start time is another process (the PID was reused): not ours.
	other := p
	other.StartTime++
	if other.Alive() || other.RSS() != 0 {
		t.Error("a process with the recorded PID but another start time counts as alive")
	}
	if err := other.stop(context.Background(), time.Second); err != nil || !p.Alive() {
		t.Fatalf("stopping a reused PID must leave the process alone: err %v, alive %t", err, p.Alive())
	}
	if err := p.stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("alive after stop")
	}
	if b := readString(log); !strings.Contains(b, "started") {
		t.Errorf("log %q does not hold the process's output", b)
	}
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p, err := startProcess("stubborn", "/bin/sh", []string{"-c", "trap '' TERM; while true; do sleep 0.1; done"},
		filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell install its trap
	start := time.Now()
	if err := p.stop(context.Background(), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("alive after SIGKILL")
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Error("stopped before the grace period: SIGTERM was not ignored, so the test does not test SIGKILL")
	}
}

func TestStartProcessErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := startProcess("x", filepath.Join(dir, "missing"), nil, filepath.Join(dir, "log")); err == nil || !strings.Contains(err.Error(), "starting x") {
		t.Errorf("missing binary: %v", err)
	}
	if _, err := startProcess("x", "/bin/true", nil, filepath.Join(dir, "no", "such", "dir", "log")); err == nil || !strings.Contains(err.Error(), "log of x") {
		t.Errorf("unwritable log: %v", err)
	}
}
