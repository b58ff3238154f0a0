package cpuqos

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/ci"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// TestRealKernelIdleYields runs the plugin against a private kubepods hierarchy on the real kernel (cgroup v1 or
// v2): a best-effort burner in the besteffort QoS cgroup and a service burner in a burstable pod, both pinned to
// one CPU so that they contend (a kernel without the cpuset controller must have one CPU), the two QoS cgroups at
// the same cpu.shares (v2: cpu.weight, which the kernel likewise refuses to change while cpu.idle is 1). With
// cpu.idle 1 on the besteffort cgroup (the default strategy) the best-effort burner gets a far smaller share of that
// CPU than with cpu.idle 0 (BE's cpuQOS off), measured as each cgroup's CPU usage over a few seconds.
func TestRealKernelIdleYields(t *testing.T) {
	box := cgrouptest.New(t)
	fs := box.FS()
	l := box.Layout()
	// Pin the sandbox to the last CPU before its children exist (they copy their parent's cpuset), and give it the
	// largest weight on this shared machine, so that the two burners mostly contend with each other. A kernel
	// without cpuset must have one CPU, which the test kernel has to itself.
	pinToOneCPU(t, box, fs)
	be := tu.Pod("batch").UID("5a1e0000-0000-4000-8000-0000000000be").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Running("containerd://be").Obj()
	svc := tu.Pod("web").UID("5a1e0000-0000-4000-8000-000000000001").Container("c").Requests("cpu", "1").Running("containerd://svc").Obj()
	store := statesinformer.NewStore()
	for _, p := range []*corev1.Pod{be, svc} {
		box.Mkdir(l.PodDir(p))
		store.SetPod(p)
	}
	beQoS, svcDir := l.QoSDir(corev1.PodQOSBestEffort), l.PodDir(svc)
	if _, err := fs.CPUIdle(beQoS); err != nil {
		ci.Skipf(t, "this kernel has no cpu.idle (Linux 5.15+): %v", err)
	}
	exe, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(qosmanager.Deps{States: store, Executor: exe, Cgroups: fs, Layout: l, Clock: clock.RealClock{}, Interval: DefaultInterval})
	if err != nil {
		t.Fatal(err)
	}
	box.Start(l.PodDir(be), "/bin/sh", "-c", "while :; do :; done")
	box.Start(svcDir, "/bin/sh", "-c", "while :; do :; done")

	// set runs the plugin with spec and checks what it wrote; measure is the best-effort burner's share of the CPU
	// over one window.
	set := func(spec *slov1alpha1.NodeSLOSpec, wantIdle bool) {
		t.Helper()
		if err := p.Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		if on, err := fs.CPUIdle(beQoS); err != nil || on != wantIdle {
			t.Fatalf("cpu.idle of %s is %v (%v), want %v", beQoS, on, err, wantIdle)
		}
		if wantIdle {
			// The kernel refuses the cpu.shares the kubelet writes to the besteffort cgroup every minute: the reason
			// the plugin stands in for the kubelet's update of the burstable cgroup (standIn).
			if err := fs.SetCPUShares(beQoS, cgroup.MinShares); err == nil {
				t.Errorf("the kernel took cpu.shares of an idle cgroup; standIn's reason is gone")
			}
			return
		}
		// Leaving idle the kernel resets the weight to 1024; the plugin writes the kubelet's 2 back.
		if n, err := fs.CPUShares(beQoS); err != nil || n != cgroup.MinShares {
			t.Errorf("cpu.shares of %s after cpu.idle 0 is %d (%v), want the kubelet's %d written back", beQoS, n, err, cgroup.MinShares)
		}
		// The comparison is at equal weights: what idle itself does. (A new v2 cgroup starts at cpu.weight 100, not
		// the 1024 shares of v1, so the burstable one is set too.)
		for _, dir := range []string{beQoS, l.QoSDir(corev1.PodQOSBurstable)} {
			if err := fs.SetCPUShares(dir, 1024); err != nil {
				t.Fatal(err)
			}
		}
	}
	measure := func(label string) float64 {
		t.Helper()
		time.Sleep(200 * time.Millisecond) // let the scheduler settle
		b0, s0 := usage(t, fs, beQoS), usage(t, fs, svcDir)
		time.Sleep(3 * time.Second)
		b, s := usage(t, fs, beQoS)-b0, usage(t, fs, svcDir)-s0
		t.Logf("%s: best-effort %v, service %v over 3 s: best-effort share %.4f", label, b, s, b.Seconds()/(b+s).Seconds())
		return b.Seconds() / (b + s).Seconds()
	}
	set(spec(nil), true)
	idleShare := measure("cpu.idle 1")
	set(spec(beOff), false)
	normalShare := measure("cpu.idle 0")
	// Equal shares give about half each without idle; SCHED_IDLE's weight (3 against 1024) well under 1 %.
	if normalShare < 0.25 {
		t.Errorf("with cpu.idle 0 the best-effort burner got %.3f of the CPU; equal weights should give it about half", normalShare)
	}
	// In the v2 test kernel the CPUs are emulated and their threads scheduled by the host, and the idle burner gets
	// far more than on a real CPU, by how much varying from run to run: 0.08-0.10 in most runs here, 0.23 in one CI
	// run, against 0.50 without idle. There a fifth is loosened to a third, and the lowest of up to three windows
	// counts: one disturbed window does not fail the test, and an idle that does nothing (about a half in every
	// window) still does.
	bound, windows := normalShare/5, 1
	if os.Getenv(cgrouptest.KernelEnv) != "" {
		bound, windows = normalShare/3, 3
	}
	for i := 1; i < windows && idleShare > bound; i++ {
		set(spec(nil), true)
		idleShare = min(idleShare, measure("cpu.idle 1, again"))
	}
	t.Logf("best-effort share of the contended CPU: %.4f with cpu.idle 1, %.4f with cpu.idle 0 (ratio %.1fx)", idleShare, normalShare, normalShare/idleShare)
	if idleShare > bound {
		t.Errorf("with cpu.idle 1 the best-effort burner got %.3f of the CPU, not far below the %.3f it gets with cpu.idle 0", idleShare, normalShare)
	}
}

func usage(t *testing.T, fs *cgroup.FS, dir string) time.Duration {
	t.Helper()
	u, err := fs.CPUUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// lastCPU is the highest CPU of a cpuset list such as "0-1" or "0,2-3".
func lastCPU(t *testing.T, list string) string {
	t.Helper()
	parts := strings.Split(list, ",")
	last := parts[len(parts)-1]
	if _, hi, ok := strings.Cut(last, "-"); ok {
		last = hi
	}
	if _, err := strconv.Atoi(last); err != nil {
		t.Fatalf("parsing the CPU list %q: %v", list, err)
	}
	return last
}

// pinToOneCPU puts the sandbox on its last CPU with the largest weight, where the kernel has cpuset; without it the
// kernel must have one CPU.
func pinToOneCPU(t *testing.T, box *cgrouptest.Sandbox, fs *cgroup.FS) {
	t.Helper()
	cpus, err := fs.CPUSet(box.Parent)
	switch {
	case box.Has("cpuset") && err != nil:
		t.Fatal(err)
	case box.Has("cpuset"):
		last := lastCPU(t, cpus.String())
		if err := os.WriteFile(filepath.Join(box.Path("cpuset", box.Parent), "cpuset.cpus"), []byte(last), 0); err != nil {
			t.Fatal(err)
		}
		// Only with the burners on a CPU of their own: on the only CPU this weight would starve the test itself.
		if err := fs.SetCPUShares(box.Parent, cgroup.MaxShares); err != nil {
			t.Fatal(err)
		}
	case runtime.NumCPU() > 1:
		t.Skipf("the kernel has %d CPUs and no cpuset controller to pin the burners to one", runtime.NumCPU())
	}
}
