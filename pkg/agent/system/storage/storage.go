package storage

// The sysfs files Devices reads, each at most a few bytes (reads are capped at maxFileSize):
//
//	/sys/block/vda/dev                "253:0\n"     major:minor of a whole disk
//	/sys/block/vda/size               "41943040\n"  size in 512-byte sectors, whatever the disk's block size
//	/sys/block/vda/queue/rotational   "0\n"         1 for a spinning disk
//	/sys/block/vda/vda1/dev           "253:1\n"     a partition (its directory is inside its disk's)
//	/sys/block/vda/vda1/partition     "1\n"
//	/sys/block/vda/vda1/size          "2048\n"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// BlockDevice is a disk or a partition.
type BlockDevice struct {
	// Name is the kernel's name ("vda", "vda1", "dm-0").
	Name string
	// Device is its major:minor, as cgroup files name it.
	Device cgroup.Device
	// Size is its size in bytes.
	Size uint64
	// Rotational says whether it is a spinning disk (a partition has its disk's).
	Rotational bool
	// Disk is the disk a partition belongs to; "" for a disk.
	Disk string
}

// maxDevices bounds how many block devices are listed: a node has tens; loop devices of a busy CI machine a few
// hundred. More is not a node the agent should describe device by device.
const maxDevices = 1024

// maxFileSize caps a sysfs read; the files read here hold one number.
const maxFileSize = 4096

// Devices lists the block devices under sysRoot/block, disks and their partitions, by name; at most maxDevices
// (an error says when more were left out, after returning the first ones). No /sys/block at all is an error
// wrapping fs.ErrNotExist.
func Devices(sysRoot string) ([]BlockDevice, error) {
	blockDir := filepath.Join(sysRoot, "block")
	disks, err := os.ReadDir(blockDir)
	if err != nil {
		return nil, fmt.Errorf("listing block devices: %w", err)
	}
	var out []BlockDevice
	var errs []error
	add := func(d BlockDevice) bool {
		if len(out) == maxDevices {
			errs = append(errs, fmt.Errorf("more than %d block devices in %s; the rest are left out", maxDevices, blockDir))
			return false
		}
		out = append(out, d)
		return true
	}
	for _, e := range disks {
		dir := filepath.Join(blockDir, e.Name())
		disk, err := readDevice(dir, e.Name())
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // a device removed while listing is no error
				errs = append(errs, err)
			}
			continue
		}
		if rot, err := readUint(filepath.Join(dir, "queue", "rotational")); err == nil {
			disk.Rotational = rot == 1
		}
		if !add(disk) {
			break
		}
		parts, _ := filepath.Glob(filepath.Join(dir, e.Name()+"*", "partition"))
		slices.Sort(parts)
		for _, p := range parts {
			pd := filepath.Dir(p)
			part, err := readDevice(pd, filepath.Base(pd))
			if err != nil {
				continue
			}
			part.Disk, part.Rotational = disk.Name, disk.Rotational
			if !add(part) {
				break
			}
		}
	}
	return out, errors.Join(errs...)
}

// readDevice reads the dev and size files of the device directory dir.
func readDevice(dir, name string) (BlockDevice, error) {
	s, err := readSmall(filepath.Join(dir, "dev"))
	if err != nil {
		return BlockDevice{}, err
	}
	d, err := cgroup.ParseDevice(s)
	if err != nil {
		return BlockDevice{}, fmt.Errorf("reading %s/dev: %w", dir, err)
	}
	sectors, err := readUint(filepath.Join(dir, "size"))
	if err != nil {
		return BlockDevice{}, err
	}
	return BlockDevice{Name: name, Device: d, Size: sectors * 512}, nil
}

func readUint(path string) (uint64, error) {
	s, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return n, nil
}

// readSmall reads a one-value sysfs file, trimmed; more than maxFileSize bytes is an error wrapping
// system.ErrTooLarge.
func readSmall(path string) (string, error) {
	b, err := system.ReadFile(path, maxFileSize)
	if errors.Is(err, system.ErrTooLarge) {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// FileSystem is the mount a directory lives on.
type FileSystem struct {
	// Path is the directory asked about.
	Path string
	// MountPoint is where the file system holding it is mounted.
	MountPoint string
	// Type is the file system type ("ext4", "xfs", "overlay", "tmpfs").
	Type string
	// Source is what is mounted ("/dev/vda", "tmpfs").
	Source string
	// Device is the st_dev of its files: a block device's numbers for a disk file system, a 0:N anonymous
	// device for tmpfs, overlay and other virtual ones.
	Device cgroup.Device
}

// FileSystemOf finds the mount holding path in a mount table: the last mount (the one on top) whose mount point
// is path or one of its parents. The path need not exist. A table without "/" that holds nothing above path is an
// error.
func FileSystemOf(mounts []*procfs.MountInfo, path string) (FileSystem, error) {
	path = filepath.Clean("/" + path)
	best := -1
	for i, m := range mounts {
		mp := filepath.Clean(m.MountPoint)
		if mp != "/" && path != mp && !strings.HasPrefix(path, mp+"/") {
			continue
		}
		// Longer mount points win; among equal ones the later mount is on top.
		if best < 0 || len(mp) >= len(filepath.Clean(mounts[best].MountPoint)) {
			best = i
		}
	}
	if best < 0 {
		return FileSystem{}, fmt.Errorf("no mount holds %s", path)
	}
	m := mounts[best]
	d, err := cgroup.ParseDevice(m.MajorMinorVer)
	if err != nil {
		return FileSystem{}, fmt.Errorf("the mount at %s: %w", m.MountPoint, err)
	}
	return FileSystem{Path: path, MountPoint: m.MountPoint, Type: m.FSType, Source: m.Source, Device: d}, nil
}
