package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/test/ci"
)

// TestRunBareStopLeavesNothing runs `make run-bare`'s script as a terminal would, interrupts its process group as
// Ctrl-C does, and checks what is left: no process started for the run (etcd and kube-apiserver run in process
// groups of their own, which Ctrl-C does not reach), no file (etcd's data, certificates, the run's directory), and a
// stop logged as one rather than as "leader election lost" with a stack trace (controller-runtime logs that error
// only when it wins a race with the stop, so StopLogger's own test pins the wording).
func TestRunBareStopLeavesNothing(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		ci.Skipf(t, "KUBEBUILDER_ASSETS is not set (make unit sets it)")
	}
	tmp := t.TempDir()
	health := freePort(t)
	cmd := exec.Command("bash", "../run.sh", "--metrics-bind-address=0", "--pprof-bind-address=0", "--webhook-port=0",
		"--health-probe-bind-address=127.0.0.1:"+health)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "GLEANER_RUN_DIR=")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting run.sh: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { killLeftovers(t, tmp) })

	waitFor(t, done, out, 5*time.Minute, "the manager to take the leader lease", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + health + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
		}
		// Every controller running (a stop while their caches still sync logs each cache's timeout as an error,
		// which is controller-runtime's way and not what this test is about).
		log := out.String()
		return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(log, "Successfully acquired lease") &&
			strings.Count(log, `"msg":"Starting workers"`) >= len(controllersStarted)
	})
	if left := processesUnder(tmp); len(left) < 2 {
		t.Fatalf("expected etcd and kube-apiserver running from %s, found %v", tmp, left)
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("interrupting the run: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run.sh after Ctrl-C: %v\n%s", err, out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("run.sh did not stop within 2m of Ctrl-C:\n%s", out)
	}

	if left := processesUnder(tmp); len(left) > 0 {
		t.Errorf("processes left running after the stop: %v", left)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files left in TMPDIR after the stop: %v", names)
	}
	log := out.String()
	if strings.Contains(log, "leader election lost") || strings.Contains(log, "stacktrace") {
		t.Errorf("a normal stop must not log a lost lease or a stack trace:\n%s", log)
	}
	if !strings.Contains(log, "run: stopped; nothing left behind") {
		t.Errorf("the stop should say that nothing was left behind:\n%s", log)
	}
}

// controllersStarted are the controllers gleaner-manager runs by default, each logging "Starting workers" once.
var controllersStarted = []string{"sloconfig", "nodeallocation", "nodeslo", "nodemetric", "noderesource", "colocationprofile"}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func waitFor(t *testing.T, done <-chan error, out fmt.Stringer, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		select {
		case err := <-done:
			t.Fatalf("run.sh exited (%v) before %s:\n%s", err, what, out)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s:\n%s", timeout, what, out)
		}
	}
}

// processesUnder returns the PIDs and commands of processes whose command line names dir (etcd's --data-dir,
// kube-apiserver's certificate directory, the run's binaries).
func processesUnder(dir string) []string {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		pid := filepath.Base(filepath.Dir(p))
		if pid == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd, _, _ := strings.Cut(string(b), "\x00")
		found = append(found, pid+" "+cmd)
	}
	return found
}

// killLeftovers stops what a failed run left, so that one failure does not leave an etcd behind on the machine.
func killLeftovers(t *testing.T, dir string) {
	for _, p := range processesUnder(dir) {
		pid, _ := strconv.Atoi(strings.Fields(p)[0])
		if pid > 0 {
			t.Logf("killing leftover %s", p)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
