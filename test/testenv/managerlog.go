package testenv

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// StopReport says what a test manager was still doing when it failed to stop (see PrepareManager): its last
// shutdown step, the controllers whose workers had not finished, and the stacks of the goroutines in
// controller-runtime's and Gleaner's code, where a runnable that ignores its context, or a reconcile or event
// handler blocked on a channel or a lock, shows. It keeps what the manager logs about those; String writes it.
type StopReport struct {
	mu sync.Mutex
	// running are the controllers that started and have not finished, by name.
	running map[string]bool
	// steps are the manager's shutdown steps ("Stopping and waiting for caches") as they began.
	steps []step
}

// step is one shutdown step of a manager and when it began.
type step struct {
	msg string
	at  time.Time
}

// logger returns the manager's logger: it records, and prints nothing (the tests' output stays readable).
func (l *StopReport) logger() logr.Logger {
	return funcr.NewJSON(l.record, funcr.Options{})
}

// record reads one log line: controller-runtime's controllers log "Starting Controller" and "All workers finished"
// with their name, and the manager logs each step of its shutdown.
func (l *StopReport) record(line string) {
	var e struct {
		Msg        string `json:"msg"`
		Controller string `json:"controller"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case e.Msg == "Starting Controller" && e.Controller != "":
		if l.running == nil {
			l.running = map[string]bool{}
		}
		l.running[e.Controller] = true
	case e.Msg == "All workers finished" && e.Controller != "":
		delete(l.running, e.Controller)
	case e.Msg == "Stopping and waiting for warmup runnables":
		// Stopped beside the others, in a goroutine of its own: not a step of the sequence.
	case strings.HasPrefix(e.Msg, "Stopping and waiting for ") || strings.HasPrefix(e.Msg, "Wait completed"):
		l.steps = append(l.steps, step{msg: e.Msg, at: time.Now()})
	}
}

// String is the report, with the goroutines as they are now. The step held up is the one that took longest: once
// the shutdown period is over, the steps after it begin and end at once.
func (l *StopReport) String() string {
	now := time.Now()
	l.mu.Lock()
	steps, running := slices.Clone(l.steps), make([]string, 0, len(l.running))
	for name := range l.running {
		running = append(running, name)
	}
	l.mu.Unlock()
	slices.Sort(running)
	var b strings.Builder
	held, longest := "(none: the manager had not begun to stop)", time.Duration(-1)
	b.WriteString("shutdown steps:")
	for i, s := range steps {
		end := now
		if i+1 < len(steps) {
			end = steps[i+1].at
		}
		took := end.Sub(s.at)
		fmt.Fprintf(&b, " %q %s;", s.msg, took.Round(time.Millisecond))
		if took > longest {
			held, longest = s.msg, took
		}
	}
	fmt.Fprintf(&b, "\nheld up at: %s\ncontrollers not finished: %v\ngoroutines in controller-runtime and Gleaner:\n", held, running)
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sigs.k8s.io/controller-runtime/") || strings.Contains(g, "github.com/gleaner-sh/gleaner/pkg/") {
			// Not this report's own goroutine, nor envtest's waits on the control plane's processes.
			if strings.Contains(g, "testenv.(*StopReport).String") || strings.Contains(g, "controller-runtime/pkg/internal/testing/") {
				continue
			}
			b.WriteString(g)
			b.WriteString("\n\n")
		}
	}
	return b.String()
}
