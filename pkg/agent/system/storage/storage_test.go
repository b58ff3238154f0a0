package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// sysTree writes files (relative path -> content) under a new sysfs root.
func sysTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDevices(t *testing.T) {
	root := sysTree(t, map[string]string{
		"block/vda/dev": "253:0\n", "block/vda/size": "41943040\n", "block/vda/queue/rotational": "0\n",
		"block/vda/vda1/dev": "253:1\n", "block/vda/vda1/size": "2048\n", "block/vda/vda1/partition": "1\n",
		"block/vda/vda2/dev": "253:2\n", "block/vda/vda2/size": "4096\n", "block/vda/vda2/partition": "2\n",
		"block/vda/holders/.keep": "", // a directory of the disk that is no partition
		"block/sdb/dev":           "8:16\n", "block/sdb/size": "100\n", "block/sdb/queue/rotational": "1\n",
		"block/loop0/dev": "7:0\n", "block/loop0/size": "0\n", // no queue directory: not rotational
	})
	got, err := Devices(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []BlockDevice{
		{Name: "loop0", Device: cgroup.Device{Major: 7}},
		{Name: "sdb", Device: cgroup.Device{Major: 8, Minor: 16}, Size: 51200, Rotational: true},
		{Name: "vda", Device: cgroup.Device{Major: 253}, Size: 41943040 * 512},
		{Name: "vda1", Device: cgroup.Device{Major: 253, Minor: 1}, Size: 2048 * 512, Disk: "vda"},
		{Name: "vda2", Device: cgroup.Device{Major: 253, Minor: 2}, Size: 4096 * 512, Disk: "vda"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Devices (-want +got):\n%s", d)
	}
}

func TestDevicesBadInput(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    int // devices still listed
		wantErr string
	}{
		{name: "bad dev", files: map[string]string{"block/vda/dev": "x\n", "block/vda/size": "1\n", "block/vdb/dev": "1:2\n", "block/vdb/size": "1\n"},
			want: 1, wantErr: `device "x" is not major:minor`},
		{name: "bad size", files: map[string]string{"block/vda/dev": "1:1\n", "block/vda/size": "-1\n"}, wantErr: "invalid syntax"},
		{name: "huge file", files: map[string]string{"block/vda/dev": strings.Repeat("1", maxFileSize+1), "block/vda/size": "1\n"},
			wantErr: "larger than 4096 bytes"},
		{name: "gone between listing and reading", files: map[string]string{"block/vda/size": "1\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Devices(sysTree(t, tt.files))
			if len(got) != tt.want {
				t.Errorf("listed %d devices, want %d: %+v", len(got), tt.want, got)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := Devices(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a sysfs without block/ = %v, want ErrNotExist", err)
	}
}

func TestDevicesAreBounded(t *testing.T) {
	files := map[string]string{}
	for i := range maxDevices + 5 {
		files[fmt.Sprintf("block/loop%d/dev", i)] = fmt.Sprintf("7:%d\n", i)
		files[fmt.Sprintf("block/loop%d/size", i)] = "0\n"
	}
	got, err := Devices(sysTree(t, files))
	if len(got) != maxDevices || err == nil || !strings.Contains(err.Error(), "more than 1024 block devices") {
		t.Errorf("listed %d devices with error %v; want %d and an error saying the rest were left out", len(got), err, maxDevices)
	}
}

func TestFileSystemOf(t *testing.T) {
	mounts := []*procfs.MountInfo{
		{MountPoint: "/", FSType: "ext4", Source: "/dev/vda", MajorMinorVer: "253:0"},
		{MountPoint: "/var/lib", FSType: "tmpfs", Source: "tmpfs", MajorMinorVer: "0:40"},
		{MountPoint: "/var/lib/containerd", FSType: "xfs", Source: "/dev/nvme0n1p2", MajorMinorVer: "259:2"},
		{MountPoint: "/var/lib/kube", FSType: "ext4", Source: "/dev/sdb", MajorMinorVer: "8:16"}, // a sibling by prefix only
		{MountPoint: "/var/lib", FSType: "ext4", Source: "/dev/sdc", MajorMinorVer: "8:32"},      // mounted over the tmpfs
	}
	tests := []struct {
		path string
		want FileSystem
	}{
		{path: "/var/lib/containerd", want: FileSystem{Path: "/var/lib/containerd", MountPoint: "/var/lib/containerd", Type: "xfs", Source: "/dev/nvme0n1p2", Device: cgroup.Device{Major: 259, Minor: 2}}},
		{path: "/var/lib/containerd/io.containerd.content.v1", want: FileSystem{Path: "/var/lib/containerd/io.containerd.content.v1", MountPoint: "/var/lib/containerd", Type: "xfs", Source: "/dev/nvme0n1p2", Device: cgroup.Device{Major: 259, Minor: 2}}},
		{path: "/var/lib/kubelet", want: FileSystem{Path: "/var/lib/kubelet", MountPoint: "/var/lib", Type: "ext4", Source: "/dev/sdc", Device: cgroup.Device{Major: 8, Minor: 32}}},
		{path: "/srv/../etc", want: FileSystem{Path: "/etc", MountPoint: "/", Type: "ext4", Source: "/dev/vda", Device: cgroup.Device{Major: 253}}},
	}
	for _, tt := range tests {
		got, err := FileSystemOf(mounts, tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("FileSystemOf(%s) (-want +got):\n%s", tt.path, d)
		}
	}
	if _, err := FileSystemOf(mounts[2:3], "/etc"); err == nil || !strings.Contains(err.Error(), "no mount holds /etc") {
		t.Errorf("a path outside every mount = %v", err)
	}
	if _, err := FileSystemOf([]*procfs.MountInfo{{MountPoint: "/", MajorMinorVer: "x"}}, "/"); err == nil {
		t.Error("a malformed device number is not an error")
	}
}

func TestLVMVG(t *testing.T) {
	for name, want := range map[string]string{
		"vg0-data": "vg0", "vg0-my--lv": "vg0", "my--vg-lv": "my-vg", "a--b--c-d--e": "a-b-c", "vg-lv-real": "vg", "nodash": "", "vg--": "",
	} {
		if got := lvmVG(name); got != want {
			t.Errorf("lvmVG(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestDiskReadsAreBounded: the files Disk and VolumeGroupDisks read are bounded like Devices' (a dev file that
// never ends is refused), and a device-mapper device whose name file is too large is passed over.
func TestDiskReadsAreBounded(t *testing.T) {
	huge := strings.Repeat("1", maxFileSize+1)
	root := sysTree(t, map[string]string{
		"block/vda/dev":  huge,
		"block/dm-0/dev": "252:0\n", "block/dm-0/dm/name": huge, "block/dm-0/dm/uuid": "LVM-aaaa\n",
	})
	if _, err := Disk(root, "vda"); !errors.Is(err, system.ErrTooLarge) {
		t.Errorf("Disk of a huge dev file: %v, want ErrTooLarge", err)
	}
	if _, err := Disk(root, "/dev/mapper/"+huge); err == nil || !strings.Contains(err.Error(), "no device-mapper device named") {
		t.Errorf("Disk of a device-mapper name only a huge name file holds: %v", err)
	}
}
