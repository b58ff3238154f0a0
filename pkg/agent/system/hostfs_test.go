package system

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostFS: paths resolve under the root or a mount, a missing file in an existing directory is ErrUnsupported,
// a missing directory fs.ErrNotExist, and nothing is ever created by a write.
func TestHostFS(t *testing.T) {
	root, procDir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(procDir, "sys/vm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(procDir, "sys/vm/swappiness"), []byte("60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := NewHostFS(root).Mount("proc", procDir)
	if got := h.Path("proc/sys/vm/swappiness"); got != filepath.Join(procDir, "sys/vm/swappiness") {
		t.Errorf("mounted path = %s", got)
	}
	if got := h.Path("sys/fs/resctrl/schemata"); got != filepath.Join(root, "sys/fs/resctrl/schemata") {
		t.Errorf("root path = %s", got)
	}
	v, err := h.ReadFile("proc/sys/vm/swappiness")
	if err != nil || v != "60" {
		t.Fatalf("ReadFile = %q, %v", v, err)
	}
	if err := h.WriteFile("proc/sys/vm/swappiness", "10"); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.ReadFile("proc/sys/vm/swappiness"); v != "10" {
		t.Errorf("after WriteFile: %q", v)
	}
	if err := h.WriteFile("proc/sys/vm/memcg_reaper", "1"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("missing file: want ErrUnsupported, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(procDir, "sys/vm/memcg_reaper")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a write created a missing file")
	}
	if err := h.WriteFile("sys/fs/resctrl/gleaner-BE/schemata", "L3:0=f"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: want fs.ErrNotExist, got %v", err)
	}
	if err := h.Mkdir("proc/sys/group"); err != nil {
		t.Fatal(err)
	}
	if err := h.Mkdir("proc/sys/group"); err != nil {
		t.Errorf("Mkdir of an existing directory: %v", err)
	}
	if err := h.Remove("proc/sys/group"); err != nil {
		t.Fatal(err)
	}
	if err := h.Remove("proc/sys/group"); err != nil {
		t.Errorf("Remove of a missing directory: %v", err)
	}
}

// TestHostFSLongestMount: /proc/sys can live apart from /proc (the DaemonSet mounts the host's /proc/sys/vm
// writable at /host/proc/sys/vm and keeps the container's own /proc for meminfo); the longest mounted prefix wins,
// and a prefix matches whole path elements only.
func TestHostFSLongestMount(t *testing.T) {
	h := NewHostFS("/root").Mount("proc", "/proc").Mount("proc/sys", "/host/proc/sys").Mount("sys", "/sys")
	tests := []struct{ rel, want string }{
		{"proc/sys/vm/min_free_kbytes", "/host/proc/sys/vm/min_free_kbytes"},
		{"proc/sys", "/host/proc/sys"},
		{"proc/meminfo", "/proc/meminfo"},
		{"proc/sysrq-trigger", "/proc/sysrq-trigger"},
		{"sys/kernel/mm/memcg_reaper/reap_background", "/sys/kernel/mm/memcg_reaper/reap_background"},
		{"var/lib/x", "/root/var/lib/x"},
	}
	for _, tt := range tests {
		if got := h.Path(tt.rel); got != tt.want {
			t.Errorf("Path(%q) = %s, want %s", tt.rel, got, tt.want)
		}
	}
}

// TestHostFSRefusesHugeFiles: a sysctl file of 2 MiB is refused with ErrTooLarge, not read whole.
func TestHostFSRefusesHugeFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/vm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/vm/min_free_kbytes"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHostFS(root).ReadFile("proc/sys/vm/min_free_kbytes"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "min_free_kbytes") {
		t.Errorf("ReadFile of 2 MiB: %v, want ErrTooLarge naming the file", err)
	}
}
