// Package cgrouptest gives tests a private, kubepods-shaped cgroup v1 hierarchy on the real kernel, with real
// processes in it, and removes all of it when the test ends (also when it fails).
//
// The hierarchy lives under /sys/fs/cgroup/<subsystem>/gleaner-test-<random>/ for the cpu, cpuacct, cpuset and
// memory subsystems, so it never touches a kubelet's own /kubepods on the same machine. Point the agent's cgroup
// layout at it with Layout(). When not root, not on cgroup v1, or when the kernel refuses to create cgroups, tests
// skip saying why, and fail under CI=true (test/ci).
//
// Sandboxes take turns across the machine: New waits for a lock on LockFile that the sandbox holds until its test
// ends, so the real-kernel tests of packages that `go test ./...` runs at the same time never measure CPU time,
// throttling or I/O while another one's burners run.
package cgrouptest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// Root is the cgroup v1 mount point the sandbox lives under.
const Root = "/sys/fs/cgroup"

// LockFile is the machine-wide lock the sandboxes of all test processes take turns on.
const LockFile = "/tmp/gleaner-cgrouptest.lock"

// turn is this process's hold on LockFile: the first sandbox of the process takes the lock, further ones (a test
// with two sandboxes, parallel tests of one package) share it, and the last one to end lets it go.
var turn struct {
	sync.Mutex
	f     *os.File
	users int
}

// takeTurn waits for the machine-wide lock and returns its release.
func takeTurn(t *testing.T) func() {
	t.Helper()
	turn.Lock()
	defer turn.Unlock()
	if turn.users == 0 {
		f, err := os.OpenFile(LockFile, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("cgrouptest: opening the lock %s: %v", LockFile, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			t.Fatalf("cgrouptest: waiting for the lock %s: %v", LockFile, err)
		}
		turn.f = f
	}
	turn.users++
	return func() {
		turn.Lock()
		defer turn.Unlock()
		if turn.users--; turn.users == 0 {
			_ = turn.f.Close() // closing the file releases the lock
			turn.f = nil
		}
	}
}

// Sandbox is a private cgroup hierarchy.
type Sandbox struct {
	t *testing.T
	// Parent is the sandbox's directory relative to each subsystem root: the kubelet cgroup root to give the agent.
	Parent string
}

// New creates the sandbox, or skips t (fails it under CI=true) where the machine cannot hold one.
func New(t *testing.T) *Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "cgrouptest: creating cgroups needs root; effective uid is %d", os.Geteuid())
	}
	if v, err := cgroup.DetectVersion(Root); err != nil || v != cgroup.V1 {
		ci.Skipf(t, "cgrouptest: this test builds a cgroup v1 hierarchy; %s is %v (%v)", Root, v, err)
	}
	t.Cleanup(takeTurn(t)) // registered first, so it runs after the sandbox is removed
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	s := &Sandbox{t: t, Parent: "gleaner-test-" + hex.EncodeToString(b)}
	if err := s.mkdir(s.Parent); err != nil {
		s.remove()
		ci.Skipf(t, "cgrouptest: the kernel refused to create cgroups under %s: %v", Root, err)
	}
	t.Cleanup(s.remove)
	return s
}

// Layout is the cgroupfs kubelet layout rooted at the sandbox.
func (s *Sandbox) Layout() cgroup.Layout {
	return cgroup.Layout{Driver: cgroup.Cgroupfs, Parent: s.Parent}
}

// Mkdir creates cgroup dir (relative to the subsystem roots, under Parent) and its parents in every subsystem.
func (s *Sandbox) Mkdir(dir string) {
	s.t.Helper()
	if !strings.HasPrefix(dir, s.Parent+"/") {
		s.t.Fatalf("cgrouptest: %s is outside the sandbox %s", dir, s.Parent)
	}
	if err := s.mkdir(dir); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Sandbox) mkdir(dir string) error {
	for _, sub := range cgroup.V1Subsystems() {
		// One level at a time: a new cpuset cgroup needs its CPUs and memory nodes before it can hold children.
		parts := strings.Split(dir, "/")
		for i := range parts {
			p := filepath.Join(Root, sub, filepath.Join(parts[:i+1]...))
			if err := os.Mkdir(p, 0o755); err != nil {
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				return fmt.Errorf("creating cgroup %s: %w", p, err)
			}
			if sub == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(filepath.Dir(p), f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(p, f), v, 0); err != nil {
						return fmt.Errorf("initialising %s/%s: %w", p, f, err)
					}
				}
			}
		}
	}
	return nil
}

// Start runs argv inside cgroup dir of every subsystem: the process moves itself in before exec, so everything it
// allocates is charged there. It is killed when the test ends.
func (s *Sandbox) Start(dir string, argv ...string) *exec.Cmd {
	s.t.Helper()
	var moves []string
	for _, sub := range cgroup.V1Subsystems() {
		moves = append(moves, fmt.Sprintf("echo $$ > %s", filepath.Join(Root, sub, dir, "cgroup.procs")))
	}
	script := strings.Join(moves, " && ") + ` && exec "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("cgrouptest: starting %v: %v", argv, err)
	}
	s.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	// Wait until the process is in the cgroup.
	procs := filepath.Join(Root, "cpuacct", dir, "cgroup.procs")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(procs)
		if slices.Contains(strings.Fields(string(b)), fmt.Sprint(cmd.Process.Pid)) {
			return cmd
		}
	}
	s.t.Fatalf("cgrouptest: %v did not enter %s", argv, dir)
	return nil
}

// Stop kills a process Start started and waits for it.
func (s *Sandbox) Stop(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// Remove deletes cgroup dir (which must hold no process) in every subsystem, as the kubelet does when a pod ends.
func (s *Sandbox) Remove(dir string) {
	s.t.Helper()
	for _, sub := range cgroup.V1Subsystems() {
		if err := rmdir(filepath.Join(Root, sub, dir)); err != nil {
			s.t.Fatalf("cgrouptest: %v", err)
		}
	}
}

// rmdir removes a cgroup directory, waiting for a killed task to leave it.
func rmdir(d string) error {
	var err error
	for range 50 {
		if err = os.Remove(d); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing %s: %w", d, err)
}

// remove deletes every cgroup of the sandbox, deepest first, in every subsystem.
func (s *Sandbox) remove() {
	for _, sub := range cgroup.V1Subsystems() {
		top := filepath.Join(Root, sub, s.Parent)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := rmdir(d); err != nil {
				s.t.Errorf("cgrouptest: %v", err)
			}
		}
	}
}
