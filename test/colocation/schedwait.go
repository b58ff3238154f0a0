package colocation

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The scheduler's own trace answers the question the latency segments leave open: when the service's thread is
// runnable and not running, what runs on its CPU instead. SchedWait follows the kernel's sched_switch,
// sched_wakeup and sched_migrate_task events (tracefs, one line each) and charges every stretch a watched thread
// waits to the class of the task that held the thread's CPU meanwhile: batch pods, the service's own other threads,
// the control plane, a kernel thread, or nothing (an idle CPU still waking up).

// SchedEventKind is the kind of a scheduler trace event SchedWait reads.
type SchedEventKind int

// The scheduler events SchedWait reads.
const (
	SchedSwitch  SchedEventKind = iota + 1 // sched_switch: CPU moves from Prev to Next
	SchedWakeup                            // sched_wakeup: PID becomes runnable on CPU To
	SchedMigrate                           // sched_migrate_task: PID moves to CPU To
)

// SchedEvent is one event of the kernel's scheduler trace.
type SchedEvent struct {
	Kind SchedEventKind
	At   time.Duration // the trace clock
	CPU  int           // the CPU that recorded the event
	// Prev and Next are a switch's tasks; PrevRunnable says Prev was preempted (its state R), not blocked.
	Prev, Next   int
	PrevRunnable bool
	// PID and To are a wakeup's or migration's task and the CPU it is to run on.
	PID, To int
}

// ParseSchedEvent reads one line of tracefs' text output (trace_pipe). ok is false for a line that is not one of
// the three events (a comment, another event, a lost-events marker).
func ParseSchedEvent(line string) (ev SchedEvent, ok bool, err error) {
	i := strings.Index(line, ": sched_")
	if i < 0 {
		return SchedEvent{}, false, nil
	}
	name, body, found := strings.Cut(line[i+2:], ": ")
	if !found {
		return SchedEvent{}, false, nil
	}
	switch name {
	case "sched_switch":
		ev.Kind = SchedSwitch
	case "sched_wakeup":
		ev.Kind = SchedWakeup
	case "sched_migrate_task":
		ev.Kind = SchedMigrate
	default:
		return SchedEvent{}, false, nil
	}
	// The head ends "[CPU] FLAGS SECONDS": a task's name before it may hold anything, so read it from the right.
	head := strings.TrimRight(line[:i], " ")
	sp := strings.LastIndexByte(head, ' ')
	secs, err := strconv.ParseFloat(head[sp+1:], 64)
	if err != nil {
		return SchedEvent{}, false, fmt.Errorf("scheduler trace line %q: time: %w", line, err)
	}
	ev.At = time.Duration(secs * float64(time.Second))
	ev.CPU = -1
	for rest := head[:max(sp, 0)]; sp > 0 && rest != "" && ev.CPU < 0; {
		rest = strings.TrimRight(rest, " ")
		sp = strings.LastIndexByte(rest, ' ')
		if t := rest[sp+1:]; len(t) > 2 && t[0] == '[' && t[len(t)-1] == ']' {
			if ev.CPU, err = strconv.Atoi(t[1 : len(t)-1]); err != nil {
				return SchedEvent{}, false, fmt.Errorf("scheduler trace line %q: CPU: %w", line, err)
			}
		}
		rest = rest[:max(sp, 0)]
	}
	if ev.CPU < 0 {
		return SchedEvent{}, false, fmt.Errorf("scheduler trace line %q: no CPU", line)
	}
	return ev, true, ev.fields(body, line)
}

// fields reads an event's key=value fields; a task's name may hold spaces, so a word without "=" is skipped.
func (ev *SchedEvent) fields(body, line string) error {
	need := 2 // pid and the CPU
	if ev.Kind == SchedSwitch {
		need = 3 // the two pids and the state
	}
	seen := 0
	for body != "" {
		var w string
		w, body, _ = strings.Cut(body, " ")
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "prev_pid":
			ev.Prev, err = strconv.Atoi(v)
		case "next_pid":
			ev.Next, err = strconv.Atoi(v)
		case "prev_state":
			ev.PrevRunnable = strings.HasPrefix(v, "R")
		case "pid":
			ev.PID, err = strconv.Atoi(v)
		case "target_cpu", "dest_cpu":
			ev.To, err = strconv.Atoi(v)
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("scheduler trace line %q: %s: %w", line, k, err)
		}
		seen++
	}
	if seen < need {
		return fmt.Errorf("scheduler trace line %q: fields missing", line)
	}
	return nil
}

// SchedWait charges the time watched threads wait for a CPU to what ran on it instead. Feed it a trace's events in
// time order; a thread that was waiting when the trace began is charged from its first event on.
type SchedWait struct {
	// ClassOf names the class of a task (by its thread ID); Watch says whether a thread is watched.
	ClassOf func(pid int) string
	Watch   func(pid int) bool

	running  map[int]int // what each CPU runs, by the last switch seen on it
	waiting  map[int]*waiter
	onCPU    map[int]time.Duration // watched threads running, since when
	Waited   map[string]time.Duration
	Waits    int           // how many waits ended with the thread running
	Ran      time.Duration // the watched threads' time on a CPU
	Switches int
	// Began counts the waits that ended with the thread running by how each began: woken onto a CPU that ran a
	// task of some class (WokenBeside), or taken off its CPU by one (PreemptedBy). A thread woken onto a CPU that
	// runs a batch task should run within microseconds (the idle group's wake-up preemption); one woken beside the
	// service's own running thread waits for it.
	Began map[string]WaitCount
}

// WaitCount counts waits and their length.
type WaitCount struct {
	N  int     `json:"n"`
	Ms float64 `json:"ms"`
	// Long counts the waits over LongWait.
	Long int `json:"long"`
}

// LongWait is where a wait stops being the cost of a switch: a woken thread that preempts what runs on its CPU runs
// within tens of microseconds.
const LongWait = time.Millisecond

// WokenBeside is the SchedWait.Began key of the waits that began with the thread woken onto a CPU running a task
// of class (or "idle", or "unknown" before the trace saw a switch there).
func WokenBeside(class string) string { return "woken beside " + class }

// PreemptedBy is the SchedWait.Began key of the waits that began with a task of class taking the thread's CPU.
func PreemptedBy(class string) string { return "preempted by " + class }

type waiter struct {
	cpu   int
	mark  time.Duration // charged up to here
	since time.Duration // the wait's start
	began string
}

// Add takes the next event.
func (s *SchedWait) Add(ev SchedEvent) {
	if s.running == nil {
		s.running, s.waiting, s.onCPU, s.Waited = map[int]int{}, map[int]*waiter{}, map[int]time.Duration{}, map[string]time.Duration{}
		s.Began = map[string]WaitCount{}
	}
	switch ev.Kind {
	case SchedSwitch:
		s.Switches++
		s.charge(ev.CPU, ev.Prev, ev.At)
		s.running[ev.CPU] = ev.Next
		if since, ok := s.onCPU[ev.Prev]; ok {
			s.Ran += ev.At - since
			delete(s.onCPU, ev.Prev)
		}
		if ev.PrevRunnable && s.Watch(ev.Prev) {
			s.waiting[ev.Prev] = &waiter{cpu: ev.CPU, mark: ev.At, since: ev.At, began: PreemptedBy(s.ClassOf(ev.Next))}
		}
		if s.Watch(ev.Next) {
			if w, ok := s.waiting[ev.Next]; ok {
				s.Waits++
				s.ended(w, ev.At)
				delete(s.waiting, ev.Next)
			}
			s.onCPU[ev.Next] = ev.At
		}
	case SchedWakeup:
		// A thread woken before it got off its CPU (the kernel traces that wakeup too) is not waiting.
		if _, running := s.onCPU[ev.PID]; !running && s.Watch(ev.PID) {
			beside := "unknown" // no switch seen on that CPU yet
			if r, known := s.running[ev.To]; known {
				beside = s.ClassOf(r)
			}
			s.waiting[ev.PID] = &waiter{cpu: ev.To, mark: ev.At, since: ev.At, began: WokenBeside(beside)}
		}
	case SchedMigrate:
		if w, ok := s.waiting[ev.PID]; ok {
			if r, known := s.running[w.cpu]; known {
				s.Waited[s.ClassOf(r)] += ev.At - w.mark
			}
			w.cpu, w.mark = ev.To, ev.At
		}
	}
}

// charge gives every thread waiting on cpu the time since its mark, to the class of prev, which ran there.
func (s *SchedWait) charge(cpu, prev int, at time.Duration) {
	for _, w := range s.waiting {
		if w.cpu == cpu {
			s.Waited[s.ClassOf(prev)] += at - w.mark
			w.mark = at
		}
	}
}

// ended counts a wait that ended at at by how it began.
func (s *SchedWait) ended(w *waiter, at time.Duration) {
	c := s.Began[w.began]
	c.N++
	c.Ms += float64(at-w.since) / float64(time.Millisecond)
	if at-w.since > LongWait {
		c.Long++
	}
	s.Began[w.began] = c
}

// Total is the whole wait charged.
func (s *SchedWait) Total() time.Duration {
	var sum time.Duration
	for _, d := range s.Waited {
		sum += d
	}
	return sum
}

// SchedWaitResult is what hack/bench/schedwait measured over one trace.
type SchedWaitResult struct {
	// WaitedMs is the watched threads' wait charged to each class of what ran instead, in ms.
	WaitedMs map[string]float64 `json:"waitedMs"`
	// Waits counts the waits that ended with a watched thread running; RanMs is their time on a CPU.
	Waits int     `json:"waits"`
	RanMs float64 `json:"ranMs"`
	// Began counts those waits by how they began (SchedWait.Began).
	Began map[string]WaitCount `json:"began,omitempty"`
	// Switches counts the trace's context switches, Lost the events the kernel dropped or wrote over.
	Switches int   `json:"switches"`
	Lost     int64 `json:"lost"`
	// RunDelayMs is the watched threads' own run-queue wait over the trace (schedstat), the charges' check.
	RunDelayMs float64 `json:"runDelayMs"`
	// OwnCPUMs is the tracer's CPU time; DurationMs the trace's length.
	OwnCPUMs       float64 `json:"ownCpuMs"`
	DurationMs     float64 `json:"durationMs"`
	WatchedThreads int     `json:"watchedThreads"`
}

// TotalMs is the whole wait charged, in ms.
func (r SchedWaitResult) TotalMs() float64 {
	var sum float64
	for _, ms := range r.WaitedMs {
		sum += ms
	}
	return sum
}

// SchedWaitClasses are the classes of what runs while a watched thread waits, in the order the report shows them.
var SchedWaitClasses = []string{"batch", "pod", "other pods", "system", "generator", "kernel", "idle", "schedwait", "gone"}

// The keys of a Summary's SchedWait beside the classes: their sum, and the watched threads' own run delay.
const (
	SchedWaitTotal    = "total"
	SchedWaitRunDelay = "run delay"
)

// schedWaitOf is the median over the phases that traced of each class's wait per second of the trace, the lost
// events' sum and the tracer's largest CPU share.
func schedWaitOf(ps []Phase) (perSecond map[string]float64, lost int64, tracerCPU float64) {
	v := map[string][]float64{}
	for _, p := range ps {
		w := p.SchedWait
		if w == nil || w.DurationMs <= 0 {
			continue
		}
		secs := w.DurationMs / 1000
		for _, c := range SchedWaitClasses {
			v[c] = append(v[c], w.WaitedMs[c]/secs)
		}
		v[SchedWaitTotal] = append(v[SchedWaitTotal], w.TotalMs()/secs)
		v[SchedWaitRunDelay] = append(v[SchedWaitRunDelay], w.RunDelayMs/secs)
		lost += w.Lost
		tracerCPU = max(tracerCPU, w.OwnCPUMs/w.DurationMs)
	}
	if len(v) == 0 {
		return nil, 0, 0
	}
	perSecond = map[string]float64{}
	for k, xs := range v {
		perSecond[k] = median(xs)
	}
	return perSecond, lost, tracerCPU
}

// BeganSummary is one way of beginning a wait over a phase's rounds: the waits a second (the median over the rounds
// that traced), their mean length and the share of them over LongWait (both pooled over the rounds).
type BeganSummary struct {
	PerSecond float64 `json:"perSecond"`
	MeanUs    float64 `json:"meanUs"`
	Long      float64 `json:"longShare"`
}

// schedBeganOf sums the phases' waits by how they began; nil when none traced.
func schedBeganOf(ps []Phase) map[string]BeganSummary {
	var traced []*SchedWaitResult
	keys := map[string]bool{}
	for _, p := range ps {
		if w := p.SchedWait; w != nil && w.DurationMs > 0 {
			traced = append(traced, w)
			for k := range w.Began {
				keys[k] = true
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	out := map[string]BeganSummary{}
	for k := range keys {
		var rates []float64
		var pooled WaitCount
		for _, w := range traced {
			c := w.Began[k] // a round without such a wait counts as 0 a second
			rates = append(rates, float64(c.N)/(w.DurationMs/1000))
			pooled.N, pooled.Ms, pooled.Long = pooled.N+c.N, pooled.Ms+c.Ms, pooled.Long+c.Long
		}
		s := BeganSummary{PerSecond: median(rates)}
		if pooled.N > 0 {
			s.MeanUs, s.Long = 1000*pooled.Ms/float64(pooled.N), float64(pooled.Long)/float64(pooled.N)
		}
		out[k] = s
	}
	return out
}

// beganOrder is the order of the Began keys in the report: woken, then preempted, each by SchedWaitClasses.
func beganOrder(present func(string) bool) []string {
	var keys []string
	for _, key := range []func(string) string{WokenBeside, PreemptedBy} {
		for _, c := range append(append([]string{}, SchedWaitClasses...), "unknown") {
			if present(key(c)) {
				keys = append(keys, key(c))
			}
		}
	}
	return keys
}
