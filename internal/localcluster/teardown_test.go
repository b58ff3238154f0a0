package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/gleaner-sh/gleaner/test/ci"
)

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// listDirs returns every directory under root, relative.
func listDirs(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() && path != root {
			rel, _ := filepath.Rel(root, path)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func TestRemoveCgroupsTakesOnlyKubepods(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root,
		"cpu/kubepods/burstable/pod1/ctr1", "cpu/kubepods/besteffort/pod2", "cpu/kubepods/pod3/ctr3",
		"memory/kubepods/burstable/pod1/ctr1", "unified/kubepods/burstable",
		"cpu/other-helper/kubepods", // someone else's tree that happens to hold a kubepods directory
		"memory/system.slice",
	)
	if err := removeCgroups(root); err != nil {
		t.Fatal(err)
	}
	want := []string{"cpu", "cpu/other-helper", "cpu/other-helper/kubepods", "memory", "memory/system.slice", "unified"}
	if diff := cmp.Diff(want, listDirs(t, root)); diff != "" {
		t.Errorf("left after removeCgroups (-want +got):\n%s", diff)
	}
}

func TestCgroupTreeProcs(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "kubepods/burstable/pod1/ctr1", "kubepods/besteffort")
	for path, content := range map[string]string{
		"kubepods/cgroup.procs":                          "",
		"kubepods/burstable/pod1/cgroup.procs":           "12\n",
		"kubepods/burstable/pod1/ctr1/cgroup.procs":      "13\n14\n",
		"kubepods/besteffort/cgroup.procs":               "15\n",
		"kubepods/burstable/pod1/ctr1/cpu.shares":        "2\n", // not a procs file
		"kubepods/burstable/pod1/ctr1/tasks":             "99\n",
		"kubepods/burstable/pod1/ctr1/notify_on_release": "0\n",
	} {
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := cgroupTreeProcs(filepath.Join(root, "kubepods"))
	slices.Sort(got)
	if diff := cmp.Diff([]int{12, 13, 14, 15}, got); diff != "" {
		t.Errorf("cgroupTreeProcs (-want +got):\n%s", diff)
	}
	if got := cgroupTreeProcs(filepath.Join(root, "missing")); len(got) != 0 {
		t.Errorf("cgroupTreeProcs of a missing tree = %v, want none", got)
	}
}

func TestMissingPathsAndResolve(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, "real/present")
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got := missingPaths([]string{filepath.Join(dir, "link", "present"), filepath.Join(dir, "link", "absent")})
	if diff := cmp.Diff([]string{filepath.Join(dir, "link", "absent")}, got); diff != "" {
		t.Errorf("missingPaths (-want +got):\n%s", diff)
	}
	if got, want := resolvePath(filepath.Join(dir, "link", "absent")), filepath.Join(dir, "real", "absent"); got != want {
		t.Errorf("resolvePath = %s, want %s (as the mount table shows it)", got, want)
	}
}

// Mounts under the state directory (containers' rootfs, shm, network namespaces) are found and unmounted, the
// deepest first; a mount at the state directory itself (the cgroup v2 node's tmpfs) is not the cluster's and stays.
func TestUnmountAll(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skipf(t, "mounting needs root; effective uid is %d", os.Geteuid())
	}
	state := t.TempDir()
	if err := unix.Mount("tmpfs", state, "tmpfs", 0, "size=4m"); err != nil {
		ci.Skipf(t, "root cannot mount tmpfs here (a container without CAP_SYS_ADMIN?): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(state, unix.MNT_DETACH) })
	c, err := New(Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	outer := c.layout.Path("run", "outer")
	inner := filepath.Join(outer, "inner")
	mkdirs(t, "/", outer)
	if err := unix.Mount("tmpfs", outer, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(outer, unix.MNT_DETACH) })
	mkdirs(t, "/", inner)
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(inner, unix.MNT_DETACH) })

	if diff := cmp.Diff([]string{inner, outer}, c.ownMounts(nil)); diff != "" {
		t.Fatalf("ownMounts (-want +got):\n%s", diff)
	}
	if left := c.Leftovers(nil); !slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, "mount "+inner) }) {
		t.Errorf("Leftovers() = %v, want it to list the mount %s", left, inner)
	}
	if err := c.unmountAll(nil); err != nil {
		t.Fatal(err)
	}
	if got := c.ownMounts(nil); len(got) != 0 {
		t.Errorf("still mounted after unmountAll: %v", got)
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mounts, func(m *procfs.MountInfo) bool { return m.MountPoint == state }) {
		t.Errorf("unmountAll unmounted the state directory's own tmpfs %s", state)
	}
}

func TestNamesDir(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"kubelet", "--root-dir=/var/lib/gleaner-local/kubelet"}, true},
		{[]string{"kubelet", "--root-dir=/var/lib/gleaner-local2/kubelet"}, false}, // a sibling directory
		{[]string{"kubelet", "--root-dir=/var/lib/kubelet"}, false},
		{[]string{"containerd-shim-runc-v2", "-address", "/var/lib/gleaner-local/run/containerd.sock"}, true},
	}
	for _, tt := range tests {
		if got := namesDir(tt.args, "/var/lib/gleaner-local"); got != tt.want {
			t.Errorf("namesDir(%q) = %t, want %t", tt.args, got, tt.want)
		}
	}
}
