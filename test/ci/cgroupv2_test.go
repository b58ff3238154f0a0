package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The cgroup v2 targets on a machine without the emulator their kernel runs in: make test-cgroupv2
// (hack/cgroupv2-test.sh, the real-kernel tests) and hack/cgroupv2-node.sh (make e2e-cgroupv2, the local cluster).
// Under CI=true each fails naming what is missing, elsewhere it skips saying why, and in both cases before compiling
// anything. Nothing is installed or booted.
func TestCgroupV2WithoutTheEmulator(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const missing = "gleaner-no-such-qemu is missing"
	targets := []struct {
		name string
		argv []string
		// workVar names the target's work directory; fail and skip start the line it prints under CI=true and outside.
		workVar, fail, skip string
	}{
		{"make test-cgroupv2", []string{"make", "-C", root, "--no-print-directory", "-o", "host-packages", "test-cgroupv2"}, "GLEANER_V2_WORK",
			"cgroupv2: FAIL: CI=true and the cgroup v2 tests cannot run: " + missing, "cgroupv2: skipped: " + missing},
		{"hack/cgroupv2-node.sh", []string{filepath.Join(root, "hack", "cgroupv2-node.sh")}, "GLEANER_V2_NODE_WORK",
			"cgroupv2-node: FAIL: CI=true and the cgroup v2 node cannot run: " + missing + " (make e2e-cgroupv2 installs qemu-system-x86",
			"cgroupv2-node: skipped: " + missing},
	}
	for _, tg := range targets {
		for _, ci := range []string{"true", ""} {
			want := tg.skip
			if ci == "true" {
				want = tg.fail
			}
			t.Run(tg.name+" CI="+ci, func(t *testing.T) {
				work := filepath.Join(t.TempDir(), "work")
				cmd := exec.Command(tg.argv[0], tg.argv[1:]...)
				cmd.Env = append(environWithout("CI", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"),
					"CI="+ci, "GLEANER_QEMU=gleaner-no-such-qemu", tg.workVar+"="+work)
				out, err := cmd.CombinedOutput()
				if failed := err != nil; failed != (ci == "true") {
					t.Errorf("%s: error %v, want failure %v; output:\n%s", tg.name, err, ci == "true", out)
				}
				if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, want) }) {
					t.Errorf("%s's output has no line starting %q; output:\n%s", tg.name, want, out)
				}
				if entries, _ := os.ReadDir(filepath.Join(work, "bin")); len(entries) > 0 {
					t.Errorf("%s compiled %d binaries although the machine cannot boot", tg.name, len(entries))
				}
			})
		}
	}
}
