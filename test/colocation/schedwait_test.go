package colocation

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSchedEvent(t *testing.T) {
	for _, c := range []struct {
		line string
		want SchedEvent
		ok   bool
	}{
		{"          <idle>-0       [001] d..2. 12345.678901: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=lsservice next_pid=4242 next_prio=120",
			SchedEvent{Kind: SchedSwitch, At: 12345678901 * time.Microsecond, CPU: 1, Prev: 0, Next: 4242, PrevRunnable: true}, true},
		// A task's name with spaces and brackets, a preempted state R+, a blocked one S.
		{" Web [x] Content-77 [000] dN.3. 10.000002: sched_switch: prev_comm=Web [x] Content prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=burner next_pid=9 next_prio=139",
			SchedEvent{Kind: SchedSwitch, At: 10000002 * time.Microsecond, CPU: 0, Prev: 77, Next: 9, PrevRunnable: true}, true},
		{"burner-9 [000] d..2. 10.5: sched_switch: prev_comm=burner prev_pid=9 prev_prio=139 prev_state=S ==> next_comm=x next_pid=3 next_prio=120",
			SchedEvent{Kind: SchedSwitch, At: 10500 * time.Millisecond, CPU: 0, Prev: 9, Next: 3}, true},
		{"  kworker/0:1-33 [000] d.h4. 7.25: sched_wakeup: comm=lsservice pid=4242 prio=120 target_cpu=001",
			SchedEvent{Kind: SchedWakeup, At: 7250 * time.Millisecond, CPU: 0, PID: 4242, To: 1}, true},
		{"  lsservice-4242 [001] d..2. 8: sched_migrate_task: comm=lsservice pid=4242 prio=120 orig_cpu=1 dest_cpu=0",
			SchedEvent{Kind: SchedMigrate, At: 8 * time.Second, CPU: 1, PID: 4242, To: 0}, true},
		{"  foo-1 [000] d..2. 9.0: sched_waking: comm=lsservice pid=4242 prio=120 target_cpu=001", SchedEvent{}, false},
		{"# tracer: nop", SchedEvent{}, false},
		{"CPU:1 [LOST 12 EVENTS]", SchedEvent{}, false},
	} {
		got, ok, err := ParseSchedEvent(c.line)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("ParseSchedEvent(%q) = %+v, %t, %v; want %+v, %t", c.line, got, ok, err, c.want, c.ok)
		}
	}
	for _, bad := range []string{
		"x-1 [zz] d..2. 1.0: sched_switch: prev_pid=1 prev_state=R next_pid=2",
		"x-1 [000] d..2. one: sched_switch: prev_pid=1 prev_state=R next_pid=2",
		"x-1 [000] d..2. 1.0: sched_switch: prev_pid=1 next_pid=2",
		"x-1 [000] d..2. 1.0: sched_wakeup: comm=a pid=b target_cpu=1",
		"1.0: sched_wakeup: pid=1 target_cpu=1",
	} {
		if _, _, err := ParseSchedEvent(bad); err == nil {
			t.Errorf("ParseSchedEvent(%q): no error", bad)
		}
	}
}

// TestSchedWaitCharges follows a watched thread (100) through a wakeup behind a batch task, a preemption by a
// system task, a wait that moves from a busy CPU to an idle one, a wakeup of a thread still on its CPU, and a short
// wakeup onto an idle CPU; and counts the waits by how they began.
func TestSchedWaitCharges(t *testing.T) {
	classes := map[int]string{0: "idle", 100: "service", 200: "batch", 300: "system"}
	s := &SchedWait{ClassOf: func(pid int) string { return classes[pid] }, Watch: func(pid int) bool { return pid == 100 }}
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	lines := []string{
		"b-200 [001] d..2. 0.000: sched_switch: prev_pid=0 prev_state=R ==> next_pid=200", // CPU 1 runs batch
		"x-300 [000] d..2. 0.000: sched_switch: prev_pid=0 prev_state=R ==> next_pid=300", // CPU 0 runs system
		"b-200 [001] d.h2. 0.010: sched_wakeup: pid=100 target_cpu=001",                   // woken behind batch
		"b-200 [001] d..2. 0.013: sched_switch: prev_pid=200 prev_state=R ==> next_pid=100",
		"s-100 [001] d..2. 0.015: sched_wakeup: pid=100 target_cpu=001", // still on its CPU: not a wait
		"s-100 [001] d..2. 0.017: sched_switch: prev_pid=100 prev_state=R+ ==> next_pid=300",
		"x-300 [001] d..2. 0.019: sched_switch: prev_pid=300 prev_state=S ==> next_pid=100",
		"s-100 [001] d..2. 0.020: sched_switch: prev_pid=100 prev_state=S ==> next_pid=200",
		"b-200 [001] d.h2. 0.030: sched_wakeup: pid=100 target_cpu=001",
		"b-200 [001] d..2. 0.031: sched_migrate_task: pid=100 orig_cpu=1 dest_cpu=0",
		"x-300 [000] d..2. 0.032: sched_switch: prev_pid=300 prev_state=S ==> next_pid=0",
		"i-0 [000] d..2. 0.0325: sched_switch: prev_pid=0 prev_state=R ==> next_pid=100",
		"s-100 [000] d..2. 0.040: sched_switch: prev_pid=100 prev_state=S ==> next_pid=0",
		"x-300 [001] d..2. 0.050: sched_wakeup: pid=100 target_cpu=000",
		"i-0 [000] d..2. 0.0502: sched_switch: prev_pid=0 prev_state=R ==> next_pid=100",
	}
	for _, l := range lines {
		ev, ok, err := ParseSchedEvent(l)
		if err != nil || !ok {
			t.Fatalf("%q: %v %t", l, err, ok)
		}
		s.Add(ev)
	}
	want := map[string]time.Duration{"batch": ms(3) + ms(1), "system": ms(2) + ms(1), "idle": ms(0.5) + ms(0.2)}
	if !maps.Equal(s.Waited, want) {
		t.Errorf("charged %v, want %v", s.Waited, want)
	}
	if s.Waits != 4 || s.Total() != ms(7.7) {
		t.Errorf("%d waits, %v in all; want 4, 7.7ms", s.Waits, s.Total())
	}
	if s.Ran != ms(4)+ms(1)+ms(7.5) {
		t.Errorf("ran %v, want 12.5ms (the last run has not ended)", s.Ran)
	}
	if s.Switches != 10 {
		t.Errorf("%d switches, want 10", s.Switches)
	}
	// The wait woken beside batch that moved to the idle CPU counts where it began, whole: 2.5 ms.
	began := map[string]WaitCount{WokenBeside("batch"): {N: 2, Ms: 5.5, Long: 2}, PreemptedBy("system"): {N: 1, Ms: 2, Long: 1},
		WokenBeside("idle"): {N: 1, Ms: 0.2}}
	if len(s.Began) != len(began) {
		t.Errorf("began %v, want %v", s.Began, began)
	}
	for k, w := range began {
		if g := s.Began[k]; g.N != w.N || g.Long != w.Long || g.Ms-w.Ms > 1e-9 || w.Ms-g.Ms > 1e-9 {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
}

// BenchmarkParseSchedEvent: the tracer parses every switch on the node while the benchmark runs beside it.
func BenchmarkParseSchedEvent(b *testing.B) {
	line := "          <idle>-0       [001] d..2. 12345.678901: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=lsservice next_pid=4242 next_prio=120"
	for b.Loop() {
		if _, _, err := ParseSchedEvent(line); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSchedWaitSummary: each class's wait per second of its trace, the median over the rounds that traced; the
// table only when one did.
func TestSchedWaitSummary(t *testing.T) {
	trace := func(batch, pod, runDelay, secs float64) *SchedWaitResult {
		return &SchedWaitResult{WaitedMs: map[string]float64{"batch": batch, "pod": pod}, RunDelayMs: runDelay,
			DurationMs: secs * 1000, OwnCPUMs: secs * 10, Lost: 1,
			Began: map[string]WaitCount{WokenBeside("batch"): {N: int(batch), Ms: batch / 20, Long: int(batch / 100)}}}
	}
	r := Report{Phases: []Phase{
		{Name: AlonePhase, Round: 1},
		{Name: "defaults 1", Round: 1, SchedWait: trace(600, 60, 700, 60)},
		{Name: "defaults 1", Round: 2, SchedWait: trace(300, 30, 330, 30)},
		{Name: "defaults 1", Round: 3, SchedWait: trace(1200, 0, 1300, 60)},
		{Name: "defaults 1", Round: 4}, // did not trace
	}}
	r.Summarise("service", "batch")
	if r.Ratios[0].SchedWait != nil {
		t.Errorf("alone traced nothing, got %v", r.Ratios[0].SchedWait)
	}
	got := r.Ratios[1]
	want := map[string]float64{"batch": 10, "pod": 1, SchedWaitTotal: 11, SchedWaitRunDelay: 11.0 + 2.0/3}
	for k, w := range want {
		if d := got.SchedWait[k] - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %v a second, want %v (all: %v)", k, got.SchedWait[k], w, got.SchedWait)
		}
	}
	// 600, 300 and 1,200 waits in 60, 30 and 60 s: 10 a second each, 50 µs on average, 1 % over LongWait; a round
	// with a second kind of beginning counts as 0 a second of it in the others.
	r.Phases[2].SchedWait.Began[PreemptedBy("pod")] = WaitCount{N: 90, Ms: 45}
	r.Summarise("service", "batch")
	got = r.Ratios[1]
	if b := got.SchedBegan[WokenBeside("batch")]; b.PerSecond != 10 || math.Abs(b.MeanUs-50) > 1e-9 || math.Abs(b.Long-0.01) > 1e-9 {
		t.Errorf("woken beside batch: %+v, want 10 a second, 50 µs, 1 %%", b)
	}
	if b := got.SchedBegan[PreemptedBy("pod")]; b.PerSecond != 0 || b.MeanUs != 500 || b.Long != 0 {
		t.Errorf("preempted by pod: %+v, want the median 0 a second, 500 µs", b)
	}
	if got.SchedWaitLost != 3 || got.SchedWaitTracerCPU != 0.01 {
		t.Errorf("lost %d, tracer %v; want 3, 0.01", got.SchedWaitLost, got.SchedWaitTracerCPU)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	_, waits, _ := strings.Cut(b.String(), "While the service's threads waited")
	if !strings.Contains(waits, "| defaults 1 | 10.00 | 1.00 | 0.00 |") || strings.Contains(waits, "| alone |") {
		t.Errorf("the wait table:\n%s", b.String())
	}
	if !strings.Contains(waits, "| phase | woken beside batch | preempted by pod |\n") ||
		!strings.Contains(waits, "| defaults 1 | 10/s, 50 µs, 1.0 % | 0/s, 500 µs, 0.0 % |") {
		t.Errorf("the table of how waits began:\n%s", waits)
	}
}
