// Command schedwait says what runs on a CPU while a pod's threads wait for it. It traces the kernel's scheduler
// (sched_switch, sched_wakeup and sched_migrate_task, in a tracefs instance of its own) for a while and charges every
// stretch a thread of the pod waits, runnable and not running, to the class of the task that held its CPU meanwhile
// (colocation.SchedWait): batch (the besteffort QoS cgroup), the pod's own threads, other pods, the load generator
// (--generator-pid), this command, kernel threads, the rest of the host (the control plane, the kubelet, containerd:
// "system"), or an idle CPU (a woken thread waiting for its CPU to come out of idle).
//
// It prints one JSON object: milliseconds charged per class, the number of waits and the pod's threads' time on a
// CPU, the waits counted by how they began (woken onto a CPU that ran a task of some class, or preempted by one:
// their number, total and how many took over a millisecond), the trace's switches, the events the kernel lost (which must be 0 for the charges to hold), the pod's
// threads' run delay by their own schedstat over the same time (what the charges should add up to), and this
// command's own CPU time. The colocation benchmark runs it in each phase with GLEANER_BENCH_SCHEDWAIT=1
// (docs/benchmarks.md); it needs root and tracefs.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gleaner-sh/gleaner/test/colocation"
)

const tracefs = "/sys/kernel/tracing"

func main() {
	pod := flag.String("pod-cgroup", "", "the watched pod's cgroup as /proc/PID/cgroup names it (e.g. /kubepods/burstable/podUID)")
	cgroupRoot := flag.String("cgroup-root", "/sys/fs/cgroup/cpu", "where the cgroup hierarchy that --pod-cgroup names is mounted")
	generator := flag.Int("generator-pid", 0, "the load generator's process, a class of its own")
	d := flag.Duration("duration", 60*time.Second, "how long to trace")
	flag.Parse()
	runtime.GOMAXPROCS(1) // one thread at a time of its own beside the service it watches
	if err := run(*pod, *cgroupRoot, *generator, *d); err != nil {
		fmt.Fprintln(os.Stderr, "schedwait:", err)
		os.Exit(1)
	}
}

func run(pod, cgroupRoot string, generator int, d time.Duration) error {
	if pod == "" {
		return errors.New("--pod-cgroup is required")
	}
	c := &classifier{pod: pod, generator: generator, self: os.Getpid(), known: map[int]string{}}
	dir := filepath.Join(cgroupRoot, pod)
	startDelay, err := runDelay(dir)
	if err != nil {
		return err
	}
	var own0 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &own0)
	inst, err := newInstance()
	if err != nil {
		return err
	}
	defer inst.remove()
	s := &colocation.SchedWait{ClassOf: c.class, Watch: func(pid int) bool { return c.class(pid) == "pod" }}
	start := time.Now()
	if err := inst.read(d, s); err != nil {
		return err
	}
	elapsed := time.Since(start)
	endDelay, err := runDelay(dir)
	if err != nil {
		return err
	}
	var own1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &own1)
	res := colocation.SchedWaitResult{WaitedMs: map[string]float64{}, Waits: s.Waits, RanMs: ms(s.Ran), Began: s.Began, Switches: s.Switches,
		Lost: inst.lost(), OwnCPUMs: ms(time.Duration(own1.Utime.Nano() + own1.Stime.Nano() - own0.Utime.Nano() - own0.Stime.Nano())),
		DurationMs: ms(elapsed), WatchedThreads: len(endDelay)}
	for class, w := range s.Waited {
		res.WaitedMs[class] = ms(w)
	}
	for tid, end := range endDelay {
		res.RunDelayMs += ms(end - startDelay[tid]) // a thread born meanwhile counts from 0
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// classifier names a task's class from its cgroup, once per task.
type classifier struct {
	pod             string
	generator, self int
	known           map[int]string
}

func (c *classifier) class(pid int) string {
	if pid == 0 {
		return "idle"
	}
	if k, ok := c.known[pid]; ok {
		return k
	}
	k := c.read(pid)
	c.known[pid] = k
	return k
}

func (c *classifier) read(pid int) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "gone" // it ended before it was looked at
	}
	tgid, ppid := statusField(status, "Tgid"), statusField(status, "PPid")
	switch {
	case tgid == c.self:
		return "schedwait"
	case c.generator != 0 && tgid == c.generator:
		return "generator"
	case pid == 2 || ppid == 2:
		return "kernel"
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "gone"
	}
	return c.ofPath(cpuCgroup(string(cg)))
}

// ofPath is the class of a task in the cgroup path.
func (c *classifier) ofPath(path string) string {
	switch {
	case strings.HasPrefix(path, c.pod):
		return "pod"
	case strings.HasPrefix(path, "/kubepods/besteffort") || strings.HasPrefix(path, "/kubepods.slice/kubepods-besteffort"):
		return "batch"
	case strings.HasPrefix(path, "/kubepods"):
		return "other pods"
	}
	return "system"
}

// statusField reads a number from /proc/PID/status.
func statusField(status []byte, key string) int {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// cpuCgroup is the cpu controller's path in /proc/PID/cgroup (cgroup v1), or the unified one (v2).
func cpuCgroup(s string) string {
	unified := ""
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			unified = parts[2]
		}
		for ctl := range strings.SplitSeq(parts[1], ",") {
			if ctl == "cpu" {
				return parts[2]
			}
		}
	}
	return unified
}

// runDelay is each thread's time waiting on a run queue (schedstat's second field) of the cgroup dir and those
// under it, by thread ID.
func runDelay(dir string) (map[int]time.Duration, error) {
	out := map[int]time.Duration{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || e.Name() != "tasks" && e.Name() != "cgroup.threads" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for f := range strings.FieldsSeq(string(b)) {
			tid, _ := strconv.Atoi(f)
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", tid))
			if err != nil {
				continue // it ended
			}
			if out[tid], err = colocation.SchedstatRunDelay(st); err != nil {
				return fmt.Errorf("thread %d's %w", tid, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the run delay of the threads in %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no threads in %s", dir)
	}
	return out, nil
}

// instance is a tracefs instance of this command's, with the three events on.
type instance struct{ dir string }

func newInstance() (*instance, error) {
	if _, err := os.Stat(filepath.Join(tracefs, "instances")); err != nil {
		if err := unix.Mount("nodev", tracefs, "tracefs", 0, ""); err != nil {
			return nil, fmt.Errorf("mounting tracefs at %s: %w", tracefs, err)
		}
	}
	in := &instance{dir: filepath.Join(tracefs, "instances", fmt.Sprintf("gleaner-schedwait-%d", os.Getpid()))}
	if err := os.Mkdir(in.dir, 0o755); err != nil {
		return nil, fmt.Errorf("making a tracefs instance: %w", err)
	}
	for file, value := range map[string]string{"buffer_size_kb": "16384", "events/sched/sched_switch/enable": "1",
		"events/sched/sched_wakeup/enable": "1", "events/sched/sched_migrate_task/enable": "1"} {
		if err := os.WriteFile(filepath.Join(in.dir, file), []byte(value), 0); err != nil {
			in.remove()
			return nil, fmt.Errorf("setting up the trace: %w", err)
		}
	}
	return in, nil
}

// read feeds the trace to s for d, then what is left in the buffer.
func (in *instance) read(d time.Duration, s *colocation.SchedWait) error {
	// A raw descriptor, polled by sleeping when empty: in Go's network poller (os.NewFile registers a non-blocking
	// descriptor there) every event would wake a thread to read it, whose switch is another event, and a first
	// version drove the node from 6,600 context switches a second to 70,000 so.
	fd, err := unix.Open(filepath.Join(in.dir, "trace_pipe"), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("opening the trace: %w", err)
	}
	defer unix.Close(fd)
	var pending []byte
	buf := make([]byte, 1<<20)
	for deadline, draining := time.Now().Add(d), false; ; {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			if draining {
				return nil
			}
			if time.Now().After(deadline) {
				_ = os.WriteFile(filepath.Join(in.dir, "tracing_on"), []byte("0"), 0)
				draining = true
			}
			time.Sleep(100 * time.Millisecond) // the buffer holds seconds of events; fewer wake-ups of its own
			continue
		case err != nil:
			return fmt.Errorf("reading the trace: %w", err)
		}
		pending = append(pending, buf[:n]...)
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break // a line not yet whole
			}
			ev, ok, err := colocation.ParseSchedEvent(string(pending[:i]))
			if err != nil {
				return err
			}
			if ok {
				s.Add(ev)
			}
			pending = pending[i+1:]
		}
	}
}

// lost is the events the kernel dropped or wrote over for a full buffer, over every CPU.
func (in *instance) lost() int64 {
	var sum int64
	stats, _ := filepath.Glob(filepath.Join(in.dir, "per_cpu", "cpu*", "stats"))
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			for _, key := range []string{"overrun: ", "dropped events: "} {
				if v, ok := strings.CutPrefix(line, key); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					sum += n
				}
			}
		}
	}
	return sum
}

func (in *instance) remove() {
	for _, e := range []string{"sched_switch", "sched_wakeup", "sched_migrate_task"} {
		_ = os.WriteFile(filepath.Join(in.dir, "events/sched", e, "enable"), []byte("0"), 0)
	}
	_ = os.Remove(in.dir)
}
