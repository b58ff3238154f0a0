package blkio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/storage"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/ci"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// blockDevice is the test kernel's scratch device (cgrouptest.BlockDeviceEnv) where it has one, else a loop device.
func blockDevice(t *testing.T) string {
	if dev := os.Getenv(cgrouptest.BlockDeviceEnv); dev != "" {
		return dev
	}
	return attachLoop(t)
}

// attachLoop backs a loop device with a sparse file under t.TempDir() and detaches it when the test ends.
func attachLoop(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("losetup"); err != nil {
		ci.Skipf(t, "blkio: this test needs losetup to create a loop device: %v", err)
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	// Direct I/O to the backing file: the loop device's writes then never wait on the page cache's writeback of
	// the rest of the machine.
	out, err := exec.Command("losetup", "--find", "--show", "--direct-io=on", img).CombinedOutput()
	if err != nil {
		ci.Skipf(t, "blkio: losetup could not attach a loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("detaching %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// loopCase is one cap and the dd that measures it: limit is in MiB/s, or in IO/s when ops is set.
type loopCase struct {
	name  string
	cfg   slov1alpha1.IOCfg
	limit float64
	ops   bool
	bs    int
	count int
	args  []string
}

// loopNode is the plugin on this machine's kernel, with a best-effort pod's cgroup in a private hierarchy and a
// loop device.
type loopNode struct {
	t       *testing.T
	box     *cgrouptest.Sandbox
	fs      *cgroup.FS
	p       *Plugin
	loop    string
	numbers cgroup.Device
	qosDir  string
	podDir  string
	// weighted: the pod's cgroup has blkio.bfq.weight (BFQ built in or loaded); without it the plugin skips the
	// weight and the test checks only that the caps still hold.
	weighted bool
}

func newLoopNode(t *testing.T) *loopNode {
	box := cgrouptest.New(t)
	n := &loopNode{t: t, box: box, fs: box.FS(), loop: blockDevice(t)}
	l := box.Layout()
	pod := tu.Pod("batch").UID("b10c0000-0000-4000-8000-0000000000be").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Obj()
	n.qosDir, n.podDir = l.QoSDir(corev1.PodQOSBestEffort), l.PodDir(pod)
	box.Mkdir(n.podDir)
	switch _, err := n.fs.IOWeight(n.podDir); {
	case err == nil:
		n.weighted = true
	case errors.Is(err, system.ErrUnsupported):
		t.Logf("no I/O weight file (no BFQ in this kernel): the weight is not checked, only that the caps hold without it: %v", err)
	default:
		t.Fatal(err)
	}
	// The machine is shared: the largest CPU weight for the sandbox, so that dd is not kept waiting for a CPU.
	if err := n.fs.SetCPUShares(box.Parent, cgroup.MaxShares); err != nil {
		t.Fatal(err)
	}
	store := statesinformer.NewStore()
	store.SetPod(pod)
	exe, err := executor.New(n.fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(qosmanager.Deps{States: store, Executor: exe, Cgroups: n.fs, Layout: l, SysRoot: "/sys"})
	if err != nil {
		t.Fatal(err)
	}
	n.p = p.(*Plugin)
	if n.numbers, err = storage.Disk(n.p.sysRoot, n.loop); err != nil {
		t.Fatal(err)
	}
	return n
}

// dd moves bs*count bytes through the loop device from inside the pod's cgroup and returns the throughput over
// dd's own time (its report on stderr): the process's start, seconds in the user-mode v2 kernel on a loaded host,
// is not the cap's doing.
func (n *loopNode) dd(bs, count int, args ...string) (bytesPerSec, opsPerSec float64) {
	n.t.Helper()
	report := filepath.Join(n.t.TempDir(), "dd.err")
	argv := append([]string{"/bin/sh", "-c", `export LC_ALL=C; exec "$@" 2>` + report, "sh", "dd", fmt.Sprintf("bs=%d", bs), fmt.Sprintf("count=%d", count)}, args...)
	if err := n.box.Start(n.podDir, argv...).Wait(); err != nil {
		b, _ := os.ReadFile(report)
		n.t.Fatalf("dd %v: %v: %s", args, err, b)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		n.t.Fatal(err)
	}
	// "25165824 bytes (25 MB, 24 MiB) copied, 12.0012 s, 2.1 MB/s"
	_, after, ok := strings.Cut(string(b), " copied, ")
	secs, _, ok2 := strings.Cut(after, " s")
	s, err := strconv.ParseFloat(secs, 64)
	if !ok || !ok2 || err != nil || s <= 0 {
		n.t.Fatalf("dd's report has no time: %q", b)
	}
	return float64(bs*count) / s, float64(count) / s
}

// check turns the case's cap on and measures it.
func (n *loopNode) check(c loopCase) {
	t := n.t
	t.Helper()
	spec := on(dev(n.loop, c.cfg))
	if err := n.p.Validate(spec); err != nil {
		t.Fatal(err)
	}
	if err := n.p.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if w := c.cfg.IOWeightPercent; w != nil && n.weighted {
		if got, err := n.fs.IOWeight(n.podDir); err != nil || got != uint64(*w) {
			t.Errorf("weight of %s = %d, %v; want %d", n.podDir, got, err, *w)
		}
	}
	// The caps are written whether or not the weight could be.
	if caps, err := n.fs.IOLimits(n.podDir); err != nil || caps[n.numbers] == (cgroup.IOLimit{}) {
		t.Errorf("caps of %s = %v, %v; want a cap on %s", n.podDir, caps, err, n.numbers)
	}
	// Above the cap is a failure at once: the kernel let through more than the cap. Under it, dd's round trip may
	// have outlasted the time the cap gives each I/O while the rest of the unit suite loaded the machine (seen: 67 %
	// and 76 % of the caps in one full run): up to three runs, and the best must come within 20 % of the cap.
	const tries = 3
	unit, best := "MiB/s", 0.0
	if c.ops {
		unit = "IO/s"
	}
	for range tries {
		bps, ops := n.dd(c.bs, c.count, c.args...)
		got := bps / mi
		if c.ops {
			got = ops
		}
		t.Logf("%s: cap %.0f %s on %s (%s), dd bs=%d count=%d: %.2f %s (%.0f%% of the cap)", c.name, c.limit, unit, n.loop, n.numbers, c.bs, c.count, got, unit, 100*got/c.limit)
		if got > 1.2*c.limit {
			t.Errorf("%s: %.2f %s, want at most 20 %% above the cap %.0f", c.name, got, unit, c.limit)
			return
		}
		if got >= 0.8*c.limit {
			return
		}
		best = max(best, got)
	}
	t.Errorf("%s: at best %.2f %s in %d runs, want within 20 %% of the cap %.0f", c.name, best, unit, tries, c.limit)
}

// TestRealKernelCapsALoopDevice caps a loop device (in the user-mode test kernel: its ubd disk) for the best-effort
// class in a private kubepods hierarchy (cgroup v1 blkio.throttle.*, v2 io.max) and measures a dd in a best-effort
// pod's cgroup with direct I/O (v1 does not attribute buffered writeback to the writer's cgroup): its throughput is within 20 % of each cap, and much higher once the strategy
// is off. The weight is checked where the kernel has BFQ (blkio.bfq.weight); without it the plugin skips the weight
// and the caps must hold all the same. docs/benchmarks.md has the numbers.
func TestRealKernelCapsALoopDevice(t *testing.T) {
	n := newLoopNode(t)
	write := []string{"if=/dev/zero", "of=" + n.loop, "oflag=direct"}
	read := []string{"if=" + n.loop, "of=/dev/null", "iflag=direct"}
	// dd waits for each I/O before it issues the next, so a cap is reached only while one I/O's round trip (dd,
	// the throttle's timer, the loop device's worker, on a busy 2-CPU machine; in the user-mode v2 kernel every I/O
	// also goes through the host) stays under the time the cap gives each: 250 ms for 512 KiB at 2 MiB/s, 100 ms at
	// 10 IO/s. The kernel may let the first I/O through at once, which puts a run of n I/Os up to n/(n-1) above the
	// cap (109 %, 103 %).
	for _, c := range []loopCase{
		{"write bytes", slov1alpha1.IOCfg{WriteBPS: i64(2 * mi), IOWeightPercent: i64(50)}, 2, false, 512 << 10, 12, write},
		{"write operations", slov1alpha1.IOCfg{WriteIOPS: i64(10)}, 10, true, 4 << 10, 30, write},
		{"read bytes", slov1alpha1.IOCfg{ReadBPS: i64(2 * mi)}, 2, false, 512 << 10, 12, read},
	} {
		n.check(c)
	}
	for _, dir := range []string{n.qosDir, n.podDir} {
		if w, err := n.fs.IOWeight(dir); n.weighted && (err != nil || w != 100) {
			t.Errorf("weight of %s after ioWeightPercent was dropped = %d, %v; want 100", dir, w, err)
		}
	}

	if err := n.p.Run(context.Background(), off()); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{n.qosDir, n.podDir} {
		if caps, err := n.fs.IOLimits(dir); err != nil || len(caps) > 0 {
			t.Errorf("caps of %s after off = %v, %v; want none", dir, caps, err)
		}
	}
	// 128 MiB: long enough for Start to see dd in the cgroup before it ends; 64 s if the cap were still there.
	bps, _ := n.dd(1<<20, 128, write...)
	t.Logf("off: dd bs=1048576 count=128 wrote %.2f MiB/s", bps/mi)
	if bps < 2*2*mi {
		t.Errorf("after off dd wrote %.2f MiB/s, want well above the former cap of 2 MiB/s", bps/mi)
	}
}
