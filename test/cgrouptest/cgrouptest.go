// Package cgrouptest gives tests a private, kubepods-shaped cgroup hierarchy on the real kernel, with real
// processes in it, and removes all of it when the test ends (also when it fails).
//
// On a cgroup v1 host the hierarchy lives under /sys/fs/cgroup/<subsystem>/gleaner-test-<random>/ for the cpu,
// cpuacct, cpuset, memory and blkio subsystems, so it never touches a kubelet's own /kubepods on the same machine.
// On cgroup v2 it lives under /sys/fs/cgroup/gleaner-test-<random>/ with every controller the kernel offers enabled
// down to each cgroup it creates; it is built only inside a kernel the tests own (KernelEnv set: the user-mode
// kernel hack/cgroupv2-test.sh boots, `make test-cgroupv2`), never in a v2 host's hierarchy, which belongs to the
// machine's systemd. The same test binary runs on both: a test gets the version's reader and writer from FS() and
// asks Require for a controller the test cannot do without, so nothing it asserts depends on the version unless
// the test says so (Only).
//
// Point the agent's cgroup layout at the sandbox with Layout(). When not root, on a v2 hierarchy outside a test
// kernel, or when the kernel refuses to create cgroups, tests skip saying why, and fail under CI=true (test/ci).
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

// Root is the cgroup mount point the sandbox lives under: the v1 subsystems' parent, or the v2 unified hierarchy.
const Root = "/sys/fs/cgroup"

// KernelEnv names the kernel the tests run in when it is theirs alone (the user-mode kernel hack/cgroupv2-test.sh
// boots sets it to "user-mode-linux <release>"): only there does New build a sandbox in a cgroup v2 hierarchy.
const KernelEnv = "GLEANER_TEST_KERNEL"

// BlockDeviceEnv names a whole block device of the test kernel that I/O tests may write over (the user-mode
// kernel's /dev/ubda, a sparse file on the host), where they cannot attach a loop device of their own.
const BlockDeviceEnv = "GLEANER_TEST_BLOCK_DEVICE"

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
	// Parent is the sandbox's directory relative to each subsystem root (v1) or to the unified hierarchy (v2): the
	// kubelet cgroup root to give the agent.
	Parent string
	// Version is the cgroup version of the hierarchy the sandbox lives in.
	Version cgroup.Version
}

// New creates the sandbox, or skips t (fails it under CI=true) where the machine cannot hold one.
func New(t *testing.T) *Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "cgrouptest: creating cgroups needs root; effective uid is %d", os.Geteuid())
	}
	v, err := cgroup.DetectVersion(Root)
	switch {
	case err != nil:
		ci.Skipf(t, "cgrouptest: no cgroup hierarchy at %s: %v", Root, err)
	case v == cgroup.V2 && os.Getenv(KernelEnv) == "":
		ci.Skipf(t, "cgrouptest: %s is a cgroup v2 hierarchy that belongs to this machine; the v2 sandbox is built only "+
			"inside a kernel the tests own (%s set, as `make test-cgroupv2` does)", Root, KernelEnv)
	}
	t.Cleanup(takeTurn(t)) // registered first, so it runs after the sandbox is removed
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	s := &Sandbox{t: t, Parent: "gleaner-test-" + hex.EncodeToString(b), Version: v}
	if err := s.mkdir(s.Parent); err != nil {
		s.remove()
		ci.Skipf(t, "cgrouptest: the kernel refused to create cgroups under %s: %v", Root, err)
	}
	t.Cleanup(s.remove)
	return s
}

// FS is the agent's cgroup reader and writer for the sandbox's version, rooted at Root.
func (s *Sandbox) FS() *cgroup.FS { return cgroup.NewFS(Root, s.Version) }

// Layout is the cgroupfs kubelet layout rooted at the sandbox.
func (s *Sandbox) Layout() cgroup.Layout {
	return cgroup.Layout{Driver: cgroup.Cgroupfs, Parent: s.Parent}
}

// Path is the absolute directory of cgroup dir in the hierarchy of a v1 subsystem, or in the unified hierarchy on
// v2 (where subsystem is ignored): for a test that reads or writes a kernel file the agent's API does not name.
func (s *Sandbox) Path(subsystem, dir string) string {
	if s.Version == cgroup.V1 {
		return filepath.Join(Root, subsystem, dir)
	}
	return filepath.Join(Root, dir)
}

// Has reports whether the sandbox's kernel has the controller (v2 names: cpu, cpuset, io, memory, pids). On v1 the
// subsystems New creates are there, or New failed.
func (s *Sandbox) Has(controller string) bool {
	s.t.Helper()
	if s.Version == cgroup.V1 {
		return true
	}
	b, err := os.ReadFile(filepath.Join(Root, s.Parent, "cgroup.controllers"))
	if err != nil {
		s.t.Fatalf("cgrouptest: reading the sandbox's controllers: %v", err)
	}
	return slices.Contains(strings.Fields(string(b)), controller)
}

// Require skips t where the sandbox's kernel lacks one of the controllers (see Has). A missing controller is what
// the kernel is, not a missing real part of the machine, so it skips under CI=true too; docs/benchmarks.md lists
// what the v2 test kernel lacks and the tests it skips.
func (s *Sandbox) Require(controllers ...string) {
	s.t.Helper()
	for _, c := range controllers {
		if !s.Has(c) {
			s.t.Skipf("cgrouptest: the kernel %q has no %s controller in its cgroup v2 hierarchy", os.Getenv(KernelEnv), c)
		}
	}
}

// Only skips t unless the sandbox is cgroup version v: for an assertion about one version's kernel files, which the
// reason names.
func (s *Sandbox) Only(v cgroup.Version, reason string) {
	s.t.Helper()
	if s.Version != v {
		s.t.Skipf("cgrouptest: this test is about cgroup %s (%s); the sandbox is %s", v, reason, s.Version)
	}
}

// Mkdir creates cgroup dir (relative to the subsystem roots, under Parent) and its parents in every subsystem. On
// v2 every controller is enabled in each parent's cgroup.subtree_control, so dir has all their files; the kernel
// then lets processes live only in leaves, as the kubelet's pod cgroups have them in their containers.
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
	if s.Version == cgroup.V2 {
		return mkdirV2(dir)
	}
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

// mkdirV2 creates dir one level at a time, enabling in each parent (the root included) every controller it has.
func mkdirV2(dir string) error {
	parent := Root
	for _, part := range strings.Split(dir, "/") {
		if err := enableControllers(parent); err != nil {
			return err
		}
		p := filepath.Join(parent, part)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", p, err)
		}
		parent = p
	}
	return nil
}

// enableControllers writes every controller of cgroup dir's cgroup.controllers to its cgroup.subtree_control.
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("reading the controllers of %s: %w", dir, err)
	}
	var enable []string
	for _, c := range strings.Fields(string(b)) {
		enable = append(enable, "+"+c)
	}
	if len(enable) == 0 {
		return nil
	}
	p := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(p, []byte(strings.Join(enable, " ")), 0); err != nil {
		return fmt.Errorf("enabling %v in %s (a cgroup holding processes cannot pass controllers on): %w", enable, p, err)
	}
	return nil
}

// dirs is cgroup dir's directory in every hierarchy the sandbox spans: one per v1 subsystem, or the one v2 tree.
func (s *Sandbox) dirs(dir string) []string {
	if s.Version == cgroup.V2 {
		return []string{filepath.Join(Root, dir)}
	}
	var ds []string
	for _, sub := range cgroup.V1Subsystems() {
		ds = append(ds, filepath.Join(Root, sub, dir))
	}
	return ds
}

// Start runs argv inside cgroup dir of every subsystem: the process moves itself in before exec, so everything it
// allocates is charged there. It is killed when the test ends. On v2, dir must be a leaf (see Mkdir).
func (s *Sandbox) Start(dir string, argv ...string) *exec.Cmd {
	s.t.Helper()
	var moves []string
	for _, d := range s.dirs(dir) {
		moves = append(moves, fmt.Sprintf("echo $$ > %s", filepath.Join(d, "cgroup.procs")))
	}
	script := strings.Join(moves, " && ") + ` && exec "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, argv...)...)
	// Pdeathsig: a test binary killed before its cleanups (go test's -timeout) must not leave burners spinning on
	// the machine; they die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("cgrouptest: starting %v: %v", argv, err)
	}
	s.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	// Wait until the process is in the cgroup: in the user-mode kernel, on a loaded host and under a small quota,
	// the shell's start alone can take seconds.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s.Holds(dir, cmd) {
			return cmd
		}
	}
	s.t.Fatalf("cgrouptest: %v did not enter %s", argv, dir)
	return nil
}

// Holds reports whether cmd, which Start started, is alive in cgroup dir: a process that has ended, by its own
// doing or the kernel's OOM killer, leaves its cgroup at once.
func (s *Sandbox) Holds(dir string, cmd *exec.Cmd) bool {
	b, _ := os.ReadFile(filepath.Join(s.Path("cpuacct", dir), "cgroup.procs"))
	return slices.Contains(strings.Fields(string(b)), fmt.Sprint(cmd.Process.Pid))
}

// Stop kills a process Start started and waits for it.
func (s *Sandbox) Stop(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// Remove deletes cgroup dir (which must hold no process) in every subsystem, as the kubelet does when a pod ends.
func (s *Sandbox) Remove(dir string) {
	s.t.Helper()
	for _, d := range s.dirs(dir) {
		if err := rmdir(d); err != nil {
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
	for _, top := range s.dirs(s.Parent) {
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
