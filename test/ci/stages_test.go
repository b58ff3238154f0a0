package ci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// standInMake is the make hack/stages.sh runs in these tests: it logs each target with its CPU priority, fails a
// target named fail*, and for a target named slow* sleeps, having written its PID, until it is killed.
const standInMake = `#!/bin/sh
t=$(eval echo \${$#})
echo "$t nice=$(nice)" >> "$LOG"
echo "output of $t"
case $t in
fail*) exit 3 ;;
slow*) echo $$ > "$PIDFILE"; exec sleep 600 ;;
esac
`

// runStages runs hack/stages.sh with the stand-in make and returns its combined output, its exit code, the
// stand-in's log (one "TARGET nice=N" line per target it ran) and the summary file.
func runStages(t *testing.T, warnSeconds string, stages ...string) (out string, code int, log []string, summary string) {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "make")
	if err := os.WriteFile(fake, []byte(standInMake), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath, stagesDir := filepath.Join(dir, "log"), filepath.Join(dir, "stages")
	// A run that waits on a stage it should have ended fails here instead of hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "hack", "stages.sh"), stages...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(environWithout("MAKEFLAGS", "MAKELEVEL", "MFLAGS"), "MAKE="+fake, "LOG="+logPath,
		"PIDFILE="+filepath.Join(dir, "pid"), "GLEANER_STAGES_DIR="+stagesDir, "GLEANER_STAGES_WARN="+warnSeconds)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("hack/stages.sh did not end within a minute (a background stage it waited for?); output:\n%s", b)
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running hack/stages.sh: %v", err)
	}
	if l, err := os.ReadFile(logPath); err == nil {
		log = strings.Split(strings.TrimSpace(string(l)), "\n")
	}
	s, err := os.ReadFile(filepath.Join(stagesDir, "summary.txt"))
	if err != nil {
		t.Fatalf("hack/stages.sh wrote no summary: %v\n%s", err, b)
	}
	if pid, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
		// A slow stand-in that is still alive after stages.sh returned is a background stage the run left behind.
		// Killed, it may stay a zombie for a moment until init reaps it: that is gone too.
		p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
		alive := func() bool {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			_, after, _ := strings.Cut(string(stat), ") ")
			return err == nil && !strings.HasPrefix(after, "Z")
		}
		for deadline := time.Now().Add(5 * time.Second); p > 0 && alive() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if p > 0 && alive() {
			_ = syscall.Kill(p, syscall.SIGKILL)
			t.Errorf("the background stage (PID %d) was still running after hack/stages.sh returned", p)
		}
	}
	return string(b), code, log, string(s)
}

// row returns the summary's row for a stage as its fields (name, start, wall, result...), or nil.
func row(summary, name string) []string {
	for _, line := range strings.Split(summary, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

func TestStagesTimesEachStage(t *testing.T) {
	out, code, log, summary := runStages(t, "4200", "a", "&b,c", "d", "wait", "e")
	if code != 0 {
		t.Fatalf("exit %d, want 0; output:\n%s", code, out)
	}
	// Foreground targets run in order at the caller's priority; the background chain at nice 19, b before c.
	fg := slices.DeleteFunc(slices.Clone(log), func(l string) bool { return strings.HasSuffix(l, "nice=19") })
	if want := []string{"a nice=0", "d nice=0", "e nice=0"}; !slices.Equal(fg, want) {
		t.Errorf("foreground targets ran as %q, want %q", fg, want)
	}
	bg := slices.DeleteFunc(slices.Clone(log), func(l string) bool { return !strings.HasSuffix(l, "nice=19") })
	if want := []string{"b nice=19", "c nice=19"}; !slices.Equal(bg, want) {
		t.Errorf("background targets ran as %q, want %q", bg, want)
	}
	// e comes after the wait: after c ended.
	if slices.Index(log, "e nice=0") < slices.Index(log, "c nice=19") {
		t.Errorf("e ran before the background stage c ended: %q", log)
	}
	for _, name := range []string{"a", "&b", "&c", "d", "e"} {
		if r := row(summary, name); len(r) < 4 || r[3] != "ok" || !regexp.MustCompile(`^\d+s$`).MatchString(r[2]) {
			t.Errorf("the summary's row for %s is %q, want its start, wall time and ok; summary:\n%s", name, r, summary)
		}
	}
	if r := row(summary, "total"); len(r) < 3 || r[2] != "passed" {
		t.Errorf("the summary's total row is %q, want a time and passed; summary:\n%s", r, summary)
	}
	// The background stages' output is printed at the wait, with a header naming them.
	if !strings.Contains(out, "----- background stage c: its output -----\noutput of c\n") {
		t.Errorf("the output does not show the background stage c's output; output:\n%s", out)
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("a run under the warning's limit warned; output:\n%s", out)
	}
}

func TestStagesWarnsPastTheLimit(t *testing.T) {
	out, code, _, summary := runStages(t, "-1", "a")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (the warning is not a failure); output:\n%s", code, out)
	}
	if !strings.Contains(summary, "stages: WARNING: this run took") {
		t.Errorf("a run past GLEANER_STAGES_WARN did not warn; summary:\n%s", summary)
	}
}

func TestStagesFailureEndsTheBackgroundAndSaysSo(t *testing.T) {
	start := time.Now()
	out, code, log, summary := runStages(t, "4200", "a", "&slow,never", "fail", "wait", "e")
	if code != 3 {
		t.Errorf("exit %d, want the failed stage's 3; output:\n%s", code, out)
	}
	if time.Since(start) > time.Minute {
		t.Errorf("hack/stages.sh waited %s for a background stage after a foreground stage failed", time.Since(start))
	}
	if slices.Contains(log, "e nice=0") || slices.Contains(log, "never nice=19") {
		t.Errorf("targets after the failure ran: %q", log)
	}
	for name, want := range map[string]string{"fail": "FAILED", "&slow": "ended", "&never": "ended"} {
		if r := row(summary, name); len(r) < 2 || !slices.Contains(r, want) {
			t.Errorf("the summary's row for %s is %q, want it to say %s; summary:\n%s", name, r, want, summary)
		}
	}
	if r := row(summary, "total"); !slices.Contains(r, "failed") {
		t.Errorf("the summary's total row is %q, want failed; summary:\n%s", r, summary)
	}
}

func TestStagesBackgroundFailureFailsAtTheWait(t *testing.T) {
	out, code, log, summary := runStages(t, "4200", "&b,failb,c", "d", "wait", "e")
	if code != 3 {
		t.Errorf("exit %d, want the background stage's 3; output:\n%s", code, out)
	}
	if slices.Contains(log, "e nice=0") || slices.Contains(log, "c nice=19") {
		t.Errorf("targets after the failed background stage ran: %q", log)
	}
	if !strings.Contains(out, "----- background stage failb: its output -----\noutput of failb\n") {
		t.Errorf("the failed background stage's output is not shown; output:\n%s", out)
	}
	for name, want := range map[string]string{"&failb": "FAILED", "&c": "reached", "d": "ok"} {
		if r := row(summary, name); !slices.Contains(r, want) {
			t.Errorf("the summary's row for %s is %q, want it to say %s; summary:\n%s", name, r, want, summary)
		}
	}
}

// TestMakeTestRunsEveryStage holds `make test` to the stages CI has always run, with the suites that measure the
// node's CPU after the background builds ended, and fuzzing proper out of it (its seed corpora run in unit).
func TestMakeTestRunsEveryStage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^test:.*\n(?:#.*\n|\t.*\n)*?\t@?hack/stages\.sh (.*)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("the Makefile's test target does not run hack/stages.sh")
	}
	var stages []string
	for _, f := range strings.Fields(string(m[1])) {
		f = strings.Trim(f, "'\"")
		stages = append(stages, strings.Split(strings.TrimPrefix(f, "&"), ",")...)
	}
	for _, want := range []string{"verify-generated", "vet", "lint", "unit", "test-cgroupv2", "e2e", "e2e-cgroupv2"} {
		if !slices.Contains(stages, want) {
			t.Errorf("make test does not run %s: its stages are %q", want, stages)
		}
	}
	wait := slices.Index(stages, "wait")
	for _, after := range []string{"e2e", "e2e-cgroupv2"} {
		if i := slices.Index(stages, after); wait < 0 || i < wait {
			t.Errorf("%s runs before the background stages are waited for (stages %q): it measures the node's CPU", after, stages)
		}
	}
	if slices.Contains(stages, "fuzz") {
		t.Errorf("make test runs the fuzzers (stages %q); their seed corpora run in unit, fuzzing is make fuzz", stages)
	}
}
