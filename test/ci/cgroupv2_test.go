package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Makefile's test-cgroupv2 target (hack/cgroupv2-test.sh) on a machine without the user-mode kernel, where
// installing it fails: stand-ins for apt-get (its update works, its install fails; it records its calls) and id (root), and a kernel command
// that does not exist. Nothing is installed or booted.
const (
	standInAptGet = `#!/bin/sh
echo "apt-get $*" >> "$LOG"
[ "$1" = update ] && exit 0
echo "E: stand-in: unable to locate package user-mode-linux" >&2
exit 100
`
	standInID = `#!/bin/sh
echo 0
`
)

func TestMakeTestCgroupV2WithoutTheKernel(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for name, script := range map[string]string{"apt-get": standInAptGet, "id": standInID} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const missing = "apt-get could not install user-mode-linux"
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
			log := filepath.Join(t.TempDir(), "log")
			work := filepath.Join(t.TempDir(), "work")
			cmd := exec.Command("make", "-C", root, "--no-print-directory", "-o", "host-packages", "test-cgroupv2")
			cmd.Env = append(environWithout("CI", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PATH"),
				"CI="+tt.ci, "LOG="+log, "PATH="+bin+":"+os.Getenv("PATH"),
				"GLEANER_UML=gleaner-no-such-kernel", "GLEANER_V2_WORK="+work)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("make test-cgroupv2: error %v, want failure %v; output:\n%s", err, tt.wantFail, out)
			}
			if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, tt.wantOutput) }) {
				t.Errorf("make test-cgroupv2's output has no line starting %q; output:\n%s", tt.wantOutput, out)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"apt-get install -y --no-install-recommends user-mode-linux",
				"apt-get update",
				"apt-get install -y --no-install-recommends user-mode-linux",
			}
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Equal(got, want) {
				t.Errorf("apt-get was asked %q, want %q", got, want)
			}
		})
	}
}
