package perf

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// perfCgroup creates a cgroup in the hierarchy the perf_event controller is attached to on this machine (its own
// v1 hierarchy where one is mounted; the v2 hierarchy otherwise, which on a hybrid host such as this one is
// /sys/fs/cgroup/unified) and removes it when the test ends. It skips (fails under CI) where there is none.
func perfCgroup(t testing.TB, name string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "perf: creating cgroups needs root; effective uid is %d", os.Geteuid())
	}
	root, err := perfEventRoot()
	if err != nil {
		ci.Skipf(t, "perf: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := filepath.Join(root, "gleaner-perf-test-"+hex.EncodeToString(b)+"-"+name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		ci.Skipf(t, "perf: the kernel refused a cgroup in %s: %v", root, err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err := os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("removing %s", dir)
	})
	return dir
}

// perfEventRoot is the mount point of the hierarchy holding the perf_event controller.
func perfEventRoot() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var v2 string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		i := slices.Index(fields, "-")
		if i < 0 || i+3 >= len(fields) {
			continue
		}
		switch fields[i+1] {
		case "cgroup":
			if slices.Contains(strings.Split(fields[i+3], ","), "perf_event") {
				return fields[4], nil
			}
		case "cgroup2":
			v2 = fields[4]
		}
	}
	if v2 == "" {
		return "", errors.New("no cgroup hierarchy with the perf_event controller is mounted")
	}
	return v2, nil
}

// burn starts a process spinning on one CPU inside cgroup dir; it is killed when the test ends.
func burn(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec /bin/sh -c 'while :; do :; done'`, dir))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if slices.Contains(strings.Fields(string(b)), fmt.Sprint(cmd.Process.Pid)) {
			return
		}
	}
	t.Fatalf("the burner did not enter %s", dir)
}

// usage is the CPU time cgroup dir accounted: usage_usec of cpu.stat on v2 (every v2 cgroup has it), cpuacct.usage
// where the perf_event hierarchy is a v1 one shared with cpuacct.
func usage(t *testing.T, dir string) time.Duration {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
		var ns int64
		if _, err := fmt.Sscanf(string(b), "%d", &ns); err == nil {
			return time.Duration(ns)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		ci.Skipf(t, "perf: the perf_event hierarchy at %s accounts no CPU time to compare with: %v", filepath.Dir(dir), err)
	}
	for line := range strings.Lines(string(b)) {
		var us int64
		if _, err := fmt.Sscanf(line, "usage_usec %d", &us); err == nil {
			return time.Duration(us) * time.Microsecond
		}
	}
	t.Fatalf("no usage_usec in %s/cpu.stat", dir)
	return 0
}

func cpus() []int {
	var c []int
	for i := range runtime.NumCPU() {
		c = append(c, i)
	}
	return c
}

// TestRealKernelCgroupCounters opens per-CPU event groups on real cgroups with PERF_FLAG_PID_CGROUP. The task
// clock (a software event every kernel has) must count about one CPU-second per second for a cgroup with a
// spinning process and almost nothing for an empty one: the same opening, grouping and reading the CPI collector
// does with cycles and instructions. Where the host has hardware counters, cycles per instruction of the spinning
// shell loop must be plausible (0.1..10); where it has none (this VM: no PMU, ENOENT), Probe must say so with
// ErrNoCounters, and opening the hardware events on a cgroup must fail the same way, which is what the collector
// reports once and steps aside for.
func TestRealKernelCgroupCounters(t *testing.T) {
	cgrouptest.New(t) // only for its machine-wide turn: nothing else burns CPU while this measures
	busy, idle := perfCgroup(t, "busy"), perfCgroup(t, "idle")
	burn(t, busy)

	open := func(dir string, e Events) *Group {
		g, err := OpenCgroup(dir, cpus(), e, "/proc")
		if errors.Is(err, syscall.ENOSYS) && os.Getenv(cgrouptest.KernelEnv) != "" {
			t.Skipf("the test kernel %q has no perf events (perf_event_open: %v)", os.Getenv(cgrouptest.KernelEnv), err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Close)
		return g
	}
	gBusy, gIdle := open(busy, TaskClock), open(idle, TaskClock)
	b0, _ := gBusy.Read()
	i0, _ := gIdle.Read()
	u0 := usage(t, busy)
	start := time.Now()
	time.Sleep(2 * time.Second)
	b1, err := gBusy.Read()
	if err != nil {
		t.Fatal(err)
	}
	u1 := usage(t, busy)
	i1, err := gIdle.Read()
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	counted, accounted := time.Duration(b1.Leader-b0.Leader), u1-u0
	t.Logf("task clock: busy cgroup %v in %v (the kernel's cpu.stat: %v; %d context switches), idle cgroup %v",
		counted, elapsed.Round(time.Millisecond), accounted, b1.Member-b0.Member, time.Duration(i1.Leader-i0.Leader))
	// The counters and the cgroup's own CPU accounting measure the same time; on a shared machine the spinner gets
	// what it gets, so they are compared with each other, not with the wall clock.
	if accounted < 100*time.Millisecond {
		t.Fatalf("the spinner got only %v of CPU in %v: the machine is too busy to compare", accounted, elapsed)
	}
	if ratio := float64(counted) / float64(accounted); ratio < 0.9 || ratio > 1.1 {
		t.Errorf("the task clock counted %v, the cgroup accounted %v: ratio %.3f, want 0.9..1.1", counted, accounted, ratio)
	}
	if idle := time.Duration(i1.Leader - i0.Leader); idle > 10*time.Millisecond {
		t.Errorf("the empty cgroup counted %v, want about 0", idle)
	}

	err = Probe(CyclesInstructions, "/proc")
	switch {
	case err == nil:
		g := open(busy, CyclesInstructions)
		c0, _ := g.Read()
		time.Sleep(time.Second)
		c1, err := g.Read()
		if err != nil {
			t.Fatal(err)
		}
		cycles, instr := c1.Leader-c0.Leader, c1.Member-c0.Member
		if instr == 0 {
			t.Fatalf("no instructions counted for a spinning process (%d cycles)", cycles)
		}
		cpi := float64(cycles) / float64(instr)
		t.Logf("hardware counters: %d cycles, %d instructions, CPI %.3f", cycles, instr, cpi)
		if cpi < 0.1 || cpi > 10 {
			t.Errorf("CPI of a spinning shell loop = %.3f, want 0.1..10", cpi)
		}
	case errors.Is(err, ErrNoCounters):
		t.Logf("this host has no hardware counters, the degrade path is what runs: %v", err)
		if !errors.Is(err, system.ErrUnsupported) {
			t.Errorf("ErrNoCounters does not wrap system.ErrUnsupported: %v", err)
		}
		if _, err := OpenCgroup(busy, cpus(), CyclesInstructions, "/proc"); !errors.Is(err, ErrNoCounters) {
			t.Errorf("opening the hardware events on a cgroup of a host without counters = %v, want ErrNoCounters", err)
		}
	case errors.Is(err, ErrForbidden):
		t.Errorf("the test runs as root, yet counting is forbidden: %v", err)
	default:
		t.Errorf("Probe: %v", err)
	}
}

// A cgroup that does not exist is fs.ErrNotExist (the container is gone), not unsupported.
func TestOpenMissingCgroup(t *testing.T) {
	_, err := OpenCgroup(filepath.Join(t.TempDir(), "gone"), cpus(), TaskClock, "/proc")
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, system.ErrUnsupported) {
		t.Errorf("opening a missing cgroup = %v, want fs.ErrNotExist", err)
	}
}

func TestParseGroup(t *testing.T) {
	read := func(v ...uint64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binaryPut(b[i*8:], x)
		}
		return b
	}
	tests := []struct {
		name           string
		in             []byte
		leader, member uint64
		wantErr        string
	}{
		{name: "running all the time", in: read(2, 100, 100, 3000, 1000), leader: 3000, member: 1000},
		{name: "multiplexed half the time: scaled up", in: read(2, 100, 50, 3000, 1000), leader: 6000, member: 2000},
		{name: "never scheduled", in: read(2, 100, 0, 0, 0)},
		{name: "short read", in: read(2, 100, 100, 3000), wantErr: "32 bytes"},
		{name: "three events", in: read(3, 100, 100, 3000, 1000), wantErr: "3 events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, m, err := parseGroup(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || l != tt.leader || m != tt.member {
				t.Errorf("parseGroup = %d, %d, %v; want %d, %d", l, m, err, tt.leader, tt.member)
			}
		})
	}
}

func binaryPut(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }
