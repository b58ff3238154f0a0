package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hack/cgroupv2-node.sh (make e2e-cgroupv2, part of make test) on a machine without the emulator: under CI=true it
// fails naming what is missing, elsewhere it skips saying why. Nothing is built or booted.
func TestCgroupV2NodeWithoutTheEmulator(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const missing = "gleaner-no-such-qemu is missing (make e2e-cgroupv2 installs qemu-system-x86"
	tests := []struct {
		name, ci   string
		wantFail   bool
		wantOutput string
	}{
		{"CI=true: fails naming what is missing", "true", true, "cgroupv2-node: FAIL: CI=true and the cgroup v2 node cannot run: " + missing},
		{"outside CI: skips with the reason", "", false, "cgroupv2-node: skipped: " + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			cmd := exec.Command(filepath.Join(root, "hack", "cgroupv2-node.sh"))
			cmd.Env = append(environWithout("CI"), "CI="+tt.ci, "GLEANER_QEMU=gleaner-no-such-qemu", "GLEANER_V2_NODE_WORK="+work)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("hack/cgroupv2-node.sh: error %v, want failure %v; output:\n%s", err, tt.wantFail, out)
			}
			if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, tt.wantOutput) }) {
				t.Errorf("hack/cgroupv2-node.sh's output has no line starting %q; output:\n%s", tt.wantOutput, out)
			}
			if _, err := os.Stat(filepath.Join(work, "bin", "e2e.test")); err == nil {
				t.Errorf("the suite was compiled although the machine cannot boot")
			}
		})
	}
}
