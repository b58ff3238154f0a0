package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Makefile's e2e target with a stand-in `gleaner-local` (its check passing or failing as CHECK says) and a
// stand-in runner for the e2e test binary (go test -exec, exiting with SUITE_RC): no cluster starts.
const (
	standInLocal = `#!/bin/sh
echo "$*" >> "$LOG"
if [ "$1" = check ]; then
	if [ "$CHECK" = pass ]; then echo "the local cluster can run on this machine"; exit 0; fi
	echo "gleaner-local: the local cluster cannot run on this machine: stand-in: no cgroup v1 memory hierarchy" >&2
	exit 1
fi
`
	standInSuite = `#!/bin/sh
echo "suite GLEANER_E2E=$GLEANER_E2E GLEANER_E2E_STATE=$GLEANER_E2E_STATE" >> "$LOG"
exit "$SUITE_RC"
`
	missing = "stand-in: no cgroup v1 memory hierarchy"
)

func TestMakeE2E(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	local, suite := filepath.Join(dir, "gleaner-local"), filepath.Join(dir, "suite")
	for path, script := range map[string]string{local: standInLocal, suite: standInSuite} {
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	ranSuite := "suite GLEANER_E2E=1 GLEANER_E2E_STATE=" + state
	down := "--state-dir " + state + " down"

	tests := []struct {
		name, ci, check, suiteRC string
		wantFail                 bool
		// wantOutput are lines of make's output (stdout and stderr).
		wantOutput []string
		// wantLog is what the stand-ins were asked to do, in order.
		wantLog []string
	}{
		{
			name: "cannot run, CI=true: fails naming what is missing", ci: "true", check: "fail", wantFail: true,
			wantOutput: []string{"e2e: FAIL: CI=true and the end-to-end tests cannot run on this machine:", "gleaner-local: the local cluster cannot run on this machine: " + missing},
			wantLog:    []string{"check"},
		},
		{
			name: "cannot run outside CI: skips with the reason", ci: "", check: "fail",
			wantOutput: []string{"e2e: skipped: the end-to-end tests cannot run on this machine (under CI=true this fails):", "gleaner-local: the local cluster cannot run on this machine: " + missing},
			wantLog:    []string{"check"},
		},
		{
			name: "cannot run, CI=false: skips", ci: "false", check: "fail",
			wantOutput: []string{"e2e: skipped: the end-to-end tests cannot run on this machine (under CI=true this fails):"},
			wantLog:    []string{"check"},
		},
		{
			name: "can run, CI=true: runs the suite and tears the cluster down", ci: "true", check: "pass", suiteRC: "0",
			wantOutput: []string{"the local cluster can run on this machine"},
			wantLog:    []string{"check", ranSuite, down},
		},
		{
			name: "the suite fails: make fails, the cluster is still torn down", ci: "true", check: "pass", suiteRC: "1", wantFail: true,
			wantLog: []string{"check", ranSuite, down},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command("make", "-C", root, "--no-print-directory", "-o", "gleaner-local", "-o", "host-packages", "e2e",
				"LOCAL="+local, "E2E_STATE="+state, "GO_TEST_FLAGS=-exec="+suite)
			cmd.Env = append(environWithout("CI", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"),
				"CI="+tt.ci, "CHECK="+tt.check, "SUITE_RC="+tt.suiteRC, "LOG="+log)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("make e2e: error %v, want failure %v; output:\n%s", err, tt.wantFail, out)
			}
			lines := strings.Split(string(out), "\n")
			for _, want := range tt.wantOutput {
				if !slices.Contains(lines, want) {
					t.Errorf("make e2e's output has no line %q; output:\n%s", want, out)
				}
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Equal(got, tt.wantLog) {
				t.Errorf("the stand-ins were asked %q, want %q", got, tt.wantLog)
			}
		})
	}
}

// environWithout is the environment without the named variables.
func environWithout(names ...string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// TestMakeHelpListsEveryTarget: `make help` names every target the Makefile defines, each with a description, the
// descriptions starting in one column.
func TestMakeHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, line := range strings.Split(string(src), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && name != "" && !strings.ContainsAny(name, " \t.$=") && !strings.HasPrefix(line, "\t") {
			targets = append(targets, name)
		}
	}
	if len(targets) < 10 {
		t.Fatalf("found only %d targets in the Makefile: %v", len(targets), targets)
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	column := -1
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Errorf("make help line without a description: %q", line)
			continue
		}
		listed[fields[0]] = true
		at := strings.Index(line, fields[1])
		if column == -1 {
			column = at
		} else if at != column {
			t.Errorf("make help's descriptions are not aligned: %q starts at %d, not %d", line, at, column)
		}
	}
	for _, target := range targets {
		if !listed[target] {
			t.Errorf("make help does not list target %s (give it a '## description')", target)
		}
	}
}
