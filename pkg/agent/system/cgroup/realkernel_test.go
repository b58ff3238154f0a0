package cgroup_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
)

// TestRealKernelReadWrite reads and writes every value of the API on a real cgroup (v1 or v2) with a process in it.
// Where the versions differ it says so: v2 keeps cpu.weight, so shares read back through the kubelet's lossy
// conversion; cpuset is checked where the kernel has the controller; PSI is read where the kernel has it.
func TestRealKernelReadWrite(t *testing.T) {
	box := cgrouptest.New(t)
	dir := box.Parent + "/kubepods/burstable/pod0000"
	box.Mkdir(dir)
	box.Start(dir, "sleep", "600")
	fs := box.FS()
	cpusets := box.Has("cpuset")

	if err := fs.SetCPUQuota(dir, cgroup.CPUQuota{Quota: 20 * time.Millisecond, Period: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetCPUShares(dir, 512); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetMemoryLimit(dir, 256<<20); err != nil {
		t.Fatal(err)
	}
	if cpusets {
		if err := fs.SetCPUSet(dir, cpuset.New(0)); err != nil {
			t.Fatal(err)
		}
	}
	burstErr := fs.SetCPUBurst(dir, 10*time.Millisecond)
	if burstErr != nil && !errors.Is(burstErr, system.ErrUnsupported) {
		t.Fatal(burstErr)
	}
	readBack(t, box, dir, burstErr == nil, cpusets)

	// Unlimited reads back as such.
	if err := fs.SetMemoryLimit(dir, -1); err != nil {
		t.Fatal(err)
	}
	if l, err := fs.MemoryLimit(dir); err != nil || l != -1 {
		t.Errorf("MemoryLimit after removing it = %d, %v; want -1", l, err)
	}
	// PSI per cgroup exists on v2 kernels with it (/proc/pressure); v1 has none.
	_, psiErr := os.Stat("/proc/pressure/cpu")
	if _, err := fs.Pressure(dir, system.PSICPU); box.Version == cgroup.V2 && psiErr == nil {
		if err != nil {
			t.Errorf("Pressure on cgroup v2 with PSI: %v", err)
		}
	} else if !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("Pressure on cgroup %s (PSI: %v): want ErrUnsupported, got %v", box.Version, psiErr, err)
	}
	// The kernel refuses a quota below its minimum (1 ms): the write error comes back.
	if err := fs.SetCPUQuota(dir, cgroup.CPUQuota{Quota: 10 * time.Microsecond, Period: 100 * time.Millisecond}); err == nil {
		t.Error("the kernel accepted a 10us quota")
	}
}

// readBack checks the values TestRealKernelReadWrite wrote.
func readBack(t *testing.T, box *cgrouptest.Sandbox, dir string, burst, cpusets bool) {
	t.Helper()
	fs := box.FS()
	q, err := fs.CPUQuota(dir)
	if err != nil || q.Cores() != 0.4 {
		t.Errorf("CPUQuota = %+v, %v; want 0.4 cores", q, err)
	}
	wantShares := sharesReadBack(t, box, dir, 512)
	if s, err := fs.CPUShares(dir); err != nil || s != wantShares {
		t.Errorf("CPUShares = %d, %v; want %d", s, err, wantShares)
	}
	if l, err := fs.MemoryLimit(dir); err != nil || l != 256<<20 {
		t.Errorf("MemoryLimit = %d, %v", l, err)
	}
	if c, err := fs.CPUSet(dir); cpusets && (err != nil || c.String() != "0") {
		t.Errorf("CPUSet = %s, %v", c, err)
	}
	if b, err := fs.CPUBurst(dir); burst && (err != nil || b != 10*time.Millisecond) {
		t.Errorf("CPUBurst = %s, %v", b, err)
	}
	if _, err := fs.CPUUsage(dir); err != nil {
		t.Errorf("CPUUsage: %v", err)
	}
	if _, err := fs.CPUStat(dir); err != nil {
		t.Errorf("CPUStat: %v", err)
	}
	// The process's pages are charged as it faults them in after exec.
	var m cgroup.MemoryStat
	for deadline := time.Now().Add(5 * time.Second); m.Usage() == 0 && err == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m, err = fs.MemoryStat(dir)
	}
	if err != nil || m.Usage() == 0 {
		t.Errorf("MemoryStat = %+v, %v; want the sleeping process's memory", m, err)
	}
}

// TestRealKernelKeepOpen checks what KeepOpen relies on, on the real kernel: a kept cgroup file read again with
// pread at offset 0 shows the current value, and once the cgroup is removed the read reports it gone and the file
// is let go.
func TestRealKernelKeepOpen(t *testing.T) {
	box := cgrouptest.New(t)
	dir := box.Parent + "/kubepods/burstable/podkeep"
	box.Mkdir(dir)
	burner := box.Start(dir, "/bin/sh", "-c", "while :; do :; done")
	fs := box.FS().KeepOpen(16)
	defer fs.Close()

	first, err := fs.CPUUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	second, err := fs.CPUUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second <= first || fs.OpenFiles() != 1 {
		t.Fatalf("kept CPU usage file read %s then %s with %d open files; want growth from one kept file", first, second, fs.OpenFiles())
	}

	box.Stop(burner)
	box.Remove(dir)
	if _, err := fs.CPUUsage(dir); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("reading a removed cgroup through a kept file: want fs.ErrNotExist, got %v", err)
	}
	if n := fs.OpenFiles(); n != 0 {
		t.Errorf("%d files still kept for a removed cgroup", n)
	}
}

// TestRealKernelKill kills a pod cgroup's processes on the real kernel: the processes of two container cgroups below
// it (and on v1, which lets an inner cgroup hold processes, one in the pod cgroup itself) die of SIGKILL; a process
// in a sibling pod survives. On v2 this is cgroup.kill.
func TestRealKernelKill(t *testing.T) {
	box := cgrouptest.New(t)
	pod := box.Parent + "/kubepods/besteffort/podkill"
	other := box.Parent + "/kubepods/besteffort/podother"
	for _, d := range []string{pod + "/ctr", pod + "/ctr2", other} {
		box.Mkdir(d)
	}
	victims := []*exec.Cmd{box.Start(pod+"/ctr", "sleep", "600"), box.Start(pod+"/ctr2", "sleep", "600")}
	if box.Version == cgroup.V1 {
		victims = append(victims, box.Start(pod, "sleep", "600"))
	}
	bystander := box.Start(other, "sleep", "600")
	exited := func(cmd *exec.Cmd) <-chan error {
		c := make(chan error, 1)
		go func() { c <- cmd.Wait() }()
		return c
	}
	var victimExits []<-chan error
	for _, v := range victims {
		victimExits = append(victimExits, exited(v))
	}

	if err := box.FS().Kill(pod); err != nil {
		t.Fatal(err)
	}
	for i, c := range victimExits {
		select {
		case err := <-c:
			ws := victims[i].ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("process %d of the pod ended with %v (%v), want SIGKILL", victims[i].Process.Pid, victims[i].ProcessState, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("process %d of the pod still runs 5s after Kill", victims[i].Process.Pid)
		}
	}
	if err := syscall.Kill(bystander.Process.Pid, 0); err != nil {
		t.Errorf("the other pod's process is gone too: %v", err)
	}
	// The killed processes leave the cgroup, so the kubelet can remove it.
	box.Remove(pod + "/ctr")
	box.Remove(pod + "/ctr2")
	box.Remove(pod)
	if err := box.FS().Kill(pod); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("Kill of a removed cgroup: want fs.ErrNotExist, got %v", err)
	}
}

// sharesReadBack is what CPUShares reads after shares were written: the same on v1; on v2, where the kernel holds
// cpu.weight (checked here to be the kubelet's conversion), the conversion read back through its inverse.
func sharesReadBack(t *testing.T, box *cgrouptest.Sandbox, dir string, shares uint64) uint64 {
	t.Helper()
	if box.Version == cgroup.V1 {
		return shares
	}
	if w, err := os.ReadFile(box.Path("cpu", dir) + "/cpu.weight"); err != nil || strings.TrimSpace(string(w)) != fmt.Sprint(cgroup.SharesToWeight(shares)) {
		t.Errorf("cpu.weight = %q, %v; want %d", w, err, cgroup.SharesToWeight(shares))
	}
	return cgroup.WeightToShares(cgroup.SharesToWeight(shares))
}
