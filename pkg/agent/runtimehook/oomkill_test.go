package runtimehook

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestMain(m *testing.M) {
	cgrouptest.HoldIfAsked()
	os.Exit(m.Run())
}

// On the real kernel (v1 and v2), a real OOM inside the pods' cgroup: a batch pod holds 32 MiB and a Burstable
// service that requested 16 MiB grows past it until the 128 MiB limit of the cgroup above both is hit. With the
// kubelet's values (batch 1000, the service 999) the OOM killer takes the service, the larger one; after one
// reconciler round of the runtime hook (the service at 333) it takes the batch pod, and the service keeps growing
// until the limit is hit again.
func TestRealKernelOOMKillsBatchBeforeServices(t *testing.T) {
	box := cgrouptest.New(t)
	box.Require("memory")
	l := box.Layout()
	batch := testutil.Pod("batch").Namespace("jobs").UID(batchUID).
		Container("main").Requests("kubernetes.io/batch-memory", "64Mi").Running("containerd://c-batch").Obj()
	svc := testutil.Pod("web").Namespace("prod").UID(lsUID).
		Container("main").Requests("cpu", "100m", "memory", "16Mi").Running("containerd://c-web").Obj()
	batchCtr, svcCtr := l.PodDir(batch)+"/c-batch", l.PodDir(svc)+"/c-web"
	box.Mkdir(batchCtr)
	box.Mkdir(svcCtr)
	fs := box.FS()
	top := l.QoSDir(corev1.PodQOSGuaranteed) // kubepods, above both pods
	if err := fs.SetMemoryLimit(top, 128<<20); err != nil {
		t.Fatal(err)
	}
	// start runs a process holding hold MiB in dir, growing by grow MiB every 50 ms once the file growAfter is there,
	// with oom_score_adj adj as the kubelet gives it, waits until it holds its memory and returns it with a channel
	// that is closed when it has exited.
	start := func(dir string, hold, grow, adj int, growAfter string) (*exec.Cmd, chan struct{}) {
		t.Helper()
		argv, err := cgrouptest.HolderArgv(hold, grow, growAfter)
		if err != nil {
			t.Fatal(err)
		}
		cmd := box.Start(dir, argv...)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", cmd.Process.Pid), []byte(strconv.Itoa(adj)), 0); err != nil {
			t.Fatal(err)
		}
		waitResident(t, cmd.Process.Pid, int64(hold)<<20)
		return cmd, done
	}
	stop := func(cmd *exec.Cmd, done chan struct{}) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	// firstToDie starts the batch pod's process and the service's, runs before (the reconciler, or nothing), then
	// makes the service grow and returns which of the two the kernel killed first. The growth waits for before, so
	// that what a round writes is in place before the limit is hit however slow the machine. Which one the kernel
	// killed first is what its log says, not which exit the test saw first: the kernel often kills the service too,
	// a few milliseconds after the batch process (the service's next charge comes before the batch process's memory
	// is freed), and the second exit can reach the test first.
	firstToDie := func(before func()) string {
		t.Helper()
		from := kernelLogEnd(t)
		b, bDone := start(batchCtr, 32, 0, 1000, "")
		defer stop(b, bDone)
		grow := filepath.Join(t.TempDir(), "grow")
		s, sDone := start(svcCtr, 8, 2, 999, grow)
		defer stop(s, sDone)
		before()
		if err := os.WriteFile(grow, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case <-bDone:
		case <-sDone:
		case <-time.After(60 * time.Second):
			t.Fatal("no process was killed within 60 s: the limit of 128 MiB was never hit")
		}
		log := kernelLogSince(t, from)
		t.Logf("the kernel's OOM kills:\n%s", oomReports(log))
		pid := firstKilled(t, log, b.Process.Pid, s.Process.Pid)
		if pid == b.Process.Pid {
			return "batch"
		}
		return "service"
	}
	if got := firstToDie(func() {}); got != "service" {
		t.Fatalf("with the kubelet's values the kernel killed the %s first; the premise (the larger service dies first) is wrong", got)
	}

	store := statesinformer.NewStore()
	store.SetPod(batch)
	store.SetPod(svc)
	store.SetNode(testutil.Node("node-a").Capacity("memory", "8Gi").Obj())
	opts := executor.DefaultOptions()
	opts.Host = system.NewHostFS("/")
	exe, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{States: store, Executor: exe, Cgroups: fs, Layout: l, CgroupVersion: box.Version, Clock: clock.RealClock{}}
	st, err := NewStatus("reconciler", "", prometheus.NewRegistry(), d.Clock)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(d, newRegistry(t, d), st, time.Second)
	got := firstToDie(func() {
		start := time.Now()
		if err := r.Reconcile(context.Background()); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		t.Logf("one reconciler round took %v", time.Since(start))
		for dir, want := range map[string]string{batchCtr: "1000", svcCtr: "333"} {
			if got := oomScoreIn(t, box, dir); got != want {
				t.Errorf("oom_score_adj in %s = %s after the round, want %s", dir, got, want)
			}
		}
	})
	if got != "batch" {
		t.Errorf("with the hook's values the kernel killed the %s first, want the batch pod", got)
	}
}

// waitResident waits until process pid has at least bytes resident.
func waitResident(t *testing.T, pid int, bytes int64) {
	t.Helper()
	var rss int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
		if err != nil {
			t.Fatalf("process %d: %v", pid, err)
		}
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			if rss = pages * int64(os.Getpagesize()); rss >= bytes {
				return
			}
		}
	}
	t.Fatalf("process %d holds %d bytes after 30 s, want %d", pid, rss, bytes)
}

// oomScoreIn is the oom_score_adj of the one process in cgroup dir of box.
func oomScoreIn(t *testing.T, box *cgrouptest.Sandbox, dir string) string {
	t.Helper()
	pids, err := box.FS().Procs(dir)
	if err != nil || len(pids) != 1 {
		t.Fatalf("processes of %s: %v, %v; want one", dir, pids, err)
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "oom_score_adj"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// kernelLogEnd is the last line of the kernel's log (reading it needs root, which the real-kernel tests have): what
// kernelLogSince takes.
func kernelLogEnd(t *testing.T) string {
	t.Helper()
	lines := kernelLogSince(t, "")
	return lines[len(lines)-1]
}

// kernelLogSince is the kernel's log after the line end, one line per entry; all of it where end is "" or no longer
// there (the log is a ring, and a busy kernel overwrites its oldest lines). Each line starts with its time stamp,
// which makes end unique.
func kernelLogSince(t *testing.T, end string) []string {
	t.Helper()
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		t.Fatalf("reading the kernel's log, which says which process the OOM killer chose: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; end != "" && i >= 0; i-- {
		if lines[i] == end {
			return lines[i+1:]
		}
	}
	return lines
}

// firstKilled is the first of pids that log, lines of the kernel's, says the OOM killer killed.
func firstKilled(t *testing.T, log []string, pids ...int) int {
	t.Helper()
	for _, line := range log {
		_, after, ok := strings.Cut(line, "Killed process ")
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(after, " ")
		for _, p := range pids {
			if pid == strconv.Itoa(p) {
				return p
			}
		}
	}
	t.Fatalf("one of processes %v has ended, but the kernel's log has no OOM kill of either", pids)
	return 0
}

// oomReports is what log, lines of the kernel's, has of its OOM kills: for each, the cgroup's usage, the candidates
// with their resident pages and oom_score_adj, and the one killed.
func oomReports(log []string) string {
	var report []string
	for _, line := range log {
		_, entry, _ := strings.Cut(line, "] ") // after the time stamp
		if strings.HasPrefix(entry, "[") || strings.HasPrefix(entry, "memory: usage") || strings.Contains(entry, "Killed process") {
			report = append(report, line)
		}
	}
	return strings.Join(report, "\n")
}
