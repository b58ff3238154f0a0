package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Makefile's test-cgroupv2 target (hack/cgroupv2-test.sh) on a machine without the emulator its kernel runs in:
// under CI=true it fails naming what is missing, elsewhere it skips saying why, and in both cases before compiling
// anything. Nothing is installed or booted.
func TestMakeTestCgroupV2WithoutTheEmulator(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const missing = "gleaner-no-such-qemu is missing"
	tests := []struct {
		name, ci   string
		wantFail   bool
		wantOutput string
	}{
		{"CI=true: fails naming what is missing", "true", true, "cgroupv2: FAIL: CI=true and the cgroup v2 tests cannot run: " + missing},
		{"outside CI: skips with the reason", "", false, "cgroupv2: skipped: " + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			cmd := exec.Command("make", "-C", root, "--no-print-directory", "-o", "host-packages", "test-cgroupv2")
			cmd.Env = append(environWithout("CI", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"),
				"CI="+tt.ci, "GLEANER_QEMU=gleaner-no-such-qemu", "GLEANER_V2_WORK="+work)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("make test-cgroupv2: error %v, want failure %v; output:\n%s", err, tt.wantFail, out)
			}
			if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, tt.wantOutput) }) {
				t.Errorf("make test-cgroupv2's output has no line starting %q; output:\n%s", tt.wantOutput, out)
			}
			if entries, _ := os.ReadDir(filepath.Join(work, "bin")); len(entries) > 0 {
				t.Errorf("test binaries were compiled although the machine cannot boot: %d in %s", len(entries), filepath.Join(work, "bin"))
			}
		})
	}
}
