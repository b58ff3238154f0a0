package colocation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// RealtimeThreads puts every thread of this process at SCHED_RR priority prio, where a remote client's requests
// are on a real node: nothing a pod runs (batch work at the lowest weight included) delays them, as nothing on the
// node delays packets arriving from another machine, which the kernel handles in softirq before any task. Threads the
// process makes later inherit the policy. The returned func puts the threads back to SCHED_OTHER. It needs
// CAP_SYS_NICE; the kernel's real-time throttling (sched_rt_runtime_us) still leaves the rest of the node 5 % of
// each CPU should the process spin. Round-robin, not SCHED_FIFO: at one FIFO priority a thread runs until it blocks,
// so a Go runtime thread spinning for a lock or a P held by a thread queued behind it on the same CPU never lets that
// thread run; with both CPUs of a 2-CPU node taken so, the process livelocked in a benchmark run here (one thread at a
// whole core for ten minutes, no phase ended, SIGQUIT not handled). SCHED_RR gives each 100 ms and moves on.
func RealtimeThreads(prio int) (restore func() error, err error) {
	set := func(policy uint32, prio uint32) error {
		tids, err := threads("/proc/self/task")
		if err != nil {
			return err
		}
		for _, tid := range tids {
			attr := &unix.SchedAttr{Policy: policy, Priority: prio}
			if err := unix.SchedSetAttr(tid, attr, 0); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it ended
				return fmt.Errorf("setting thread %d's scheduling policy to %d: %w", tid, policy, err)
			}
		}
		return nil
	}
	if prio < 1 || prio > 99 {
		return nil, fmt.Errorf("real-time priority %d: want 1 to 99", prio)
	}
	if err := set(unix.SCHED_RR, uint32(prio)); err != nil {
		_ = set(unix.SCHED_NORMAL, 0)
		return nil, err
	}
	return func() error { return set(unix.SCHED_NORMAL, 0) }, nil
}

// threads lists the thread IDs in a /proc/PID/task directory.
func threads(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing threads: %w", err)
	}
	var out []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

// RunDelay is the time the threads of a /proc/PID/task directory have waited on a run queue (the second field of
// each thread's schedstat), summed: for the load generator's process, how long it was ready to send or read and
// could not. A thread that ended took its share with it; Go's threads live as long as the process.
func RunDelay(taskDir string) (time.Duration, error) {
	tids, err := threads(taskDir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(taskDir, strconv.Itoa(tid), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // ended between the listing and the read
		}
		if err != nil {
			return 0, fmt.Errorf("reading thread %d's schedstat: %w", tid, err)
		}
		wait, err := SchedstatRunDelay(b)
		if err != nil {
			return 0, fmt.Errorf("thread %d's %w", tid, err)
		}
		sum += wait
	}
	return sum, nil
}

// SchedstatRunDelay is the run-queue wait in a thread's /proc/PID/task/TID/schedstat: its second field.
func SchedstatRunDelay(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("schedstat %q: want three fields (run, wait, slices)", strings.TrimSpace(string(b)))
	}
	wait, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat %q: %w", strings.TrimSpace(string(b)), err)
	}
	return time.Duration(wait), nil
}
