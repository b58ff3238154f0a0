package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

func TestPreflight(t *testing.T) {
	// A cgroup root with the required hierarchies as plain directories: mkdir works in them as in a real one.
	root := t.TempDir()
	var v1Mounts []*procfs.MountInfo
	for _, c := range requiredControllers() {
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
		v1Mounts = append(v1Mounts, &procfs.MountInfo{MountPoint: filepath.Join(root, c), FSType: "cgroup"})
	}
	withOverlay := "nodev\tsysfs\nnodev\toverlay\n"
	// cgroup v2 roots: a directory with the root's cgroup.controllers, one offering what the kubelet needs (cpuset
	// and hugetlb are not needed: the kubelet uses them where the kernel has them), one without io.
	v2Root, v2NoIO := t.TempDir(), t.TempDir()
	for dir, controllers := range map[string]string{v2Root: "cpu io memory pids\n", v2NoIO: "cpu memory pids\n"} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(controllers), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2Mounts := []*procfs.MountInfo{{MountPoint: v2Root, FSType: "cgroup2"}}
	tests := []struct {
		name string
		host HostInfo
		// want are substrings of the error; none means no error.
		want []string
	}{
		{name: "cgroup v1 as root", host: HostInfo{EUID: 0, CgroupRoot: root, Mounts: v1Mounts, Filesystems: withOverlay}},
		{
			name: "not root", host: HostInfo{EUID: 1000, CgroupRoot: root, Mounts: v1Mounts, Filesystems: withOverlay},
			want: []string{"must run as root", "uid is 1000"},
		},
		{
			name: "cgroup v2", host: HostInfo{EUID: 0, CgroupRoot: v2Root, Filesystems: withOverlay, Mounts: v2Mounts},
		},
		{
			name: "cgroup v2 without the io controller", host: HostInfo{EUID: 0, CgroupRoot: v2NoIO, Filesystems: withOverlay,
				Mounts: []*procfs.MountInfo{{MountPoint: v2NoIO, FSType: "cgroup2"}}},
			want: []string{"does not offer the io controller", `offers "cpu memory pids"`},
		},
		{
			name: "cgroup v2 unreadable", host: HostInfo{EUID: 0, CgroupRoot: root, Filesystems: withOverlay,
				Mounts: []*procfs.MountInfo{{MountPoint: root, FSType: "cgroup2"}}},
			want: []string{"reading the cgroup v2 root's controllers"},
		},
		{
			name: "a hierarchy missing", host: HostInfo{EUID: 0, CgroupRoot: root, Mounts: v1Mounts[1:], Filesystems: withOverlay},
			want: []string{"no cgroup v1 " + requiredControllers()[0] + " hierarchy"},
		},
		{
			name: "no overlayfs", host: HostInfo{EUID: 0, CgroupRoot: root, Mounts: v1Mounts, Filesystems: "nodev\tsysfs\n"},
			want: []string{"no overlay filesystem"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.host.Preflight()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Preflight() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrCannotRun) {
				t.Fatalf("Preflight() = %v, want an error wrapping ErrCannotRun", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Preflight() = %q, want it to say %q", err, w)
				}
			}
		})
	}
	// The probes leave nothing behind.
	if entries, _ := os.ReadDir(v2Root); len(entries) != 1 {
		t.Errorf("the cgroup v2 root has %d entries after the probe, want only cgroup.controllers", len(entries))
	}
	for _, c := range requiredControllers() {
		if entries, _ := os.ReadDir(filepath.Join(root, c)); len(entries) != 0 {
			t.Errorf("%s has %d entries after the probes, want none", c, len(entries))
		}
	}
}

func TestPreflightCgroupNotWritable(t *testing.T) {
	root := t.TempDir()
	var mounts []*procfs.MountInfo
	for _, c := range requiredControllers() {
		// A file where the hierarchy should be: mkdir under it fails even for root.
		if err := os.WriteFile(filepath.Join(root, c), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, &procfs.MountInfo{MountPoint: filepath.Join(root, c), FSType: "cgroup"})
	}
	err := HostInfo{EUID: 0, CgroupRoot: root, Mounts: mounts, Filesystems: "nodev\toverlay\n"}.Preflight()
	if err == nil || !strings.Contains(err.Error(), "cannot create cgroups in "+filepath.Join(root, "cpu")) {
		t.Errorf("Preflight() = %v, want it to say it cannot create cgroups in %s", err, filepath.Join(root, "cpu"))
	}
}
