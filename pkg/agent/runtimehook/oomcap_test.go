package runtimehook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/test/ci"
)

func TestRuntimeCanLowerOOMScores(t *testing.T) {
	tests := []struct {
		name, status string
		want         bool
		err          string
	}{
		{"a full bounding set", "Name:\tsystemd\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n", true, ""},
		{"without CAP_SYS_RESOURCE", "Name:\tinit\nCapBnd:\t000001fffeffffff\n", false, ""},
		{"only CAP_SYS_RESOURCE", "CapBnd:\t0000000001000000\n", true, ""},
		{"no CapBnd", "Name:\tinit\n", false, "has no CapBnd line"},
		{"not hexadecimal", "CapBnd:\tall\n", false, `CapBnd "all" is not a hexadecimal capability set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "1", "status"), []byte(tt.status), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := RuntimeCanLowerOOMScores(root)
			if got != tt.want || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, %v; want %v and an error holding %q", got, err, tt.want, tt.err)
			}
		})
	}
	if _, err := RuntimeCanLowerOOMScores(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("without /proc/1/status: %v, want a not-exist error", err)
	}
}

// TestRealKernelRuntimeCanLowerOOMScores: on this machine, what RuntimeCanLowerOOMScores says of the host's /proc is
// what the kernel does when a process of root's asks for a score below 0, as runc does in a container's init.
func TestRealKernelRuntimeCanLowerOOMScores(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skipf(t, "a process of root's is the runtime's case; effective uid is %d", os.Geteuid())
	}
	predicted, err := RuntimeCanLowerOOMScores("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", "echo 0 > /proc/self/oom_score_adj && echo -1 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj").CombinedOutput()
	lowered := err == nil && strings.TrimSpace(string(out)) == "-1"
	t.Logf("predicted %v; a root shell's score -1: %v (%q)", predicted, lowered, strings.TrimSpace(string(out)))
	if predicted != lowered {
		t.Errorf("RuntimeCanLowerOOMScores says %v, and a root process lowering its score below 0 succeeded: %v (%q)", predicted, lowered, out)
	}
}
