package storage

// The sysfs files Disk and VolumeGroupDisks read to find the numbers of the block devices a NodeSLO names (through
// readSmall, bounded like every read of this package):
//
//	/sys/block/vda/dev                "253:0\n"               a whole disk (the only kind blkio caps take)
//	/sys/block/vda/vda2/partition     "2\n"                   a partition of vda
//	/sys/block/dm-0/dm/name           "vg0-data\n"            a device-mapper device; LVM names it <vg>-<lv>,
//	                                                          doubling the dashes inside each name
//	/sys/block/dm-0/dm/uuid           "LVM-<vg uuid><lv uuid>\n"
//	/sys/block/dm-0/slaves/vda2       the devices under dm-0 (a symlink per device)

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// blockPath is sysRoot/block/elem...
func blockPath(sysRoot string, elem ...string) string {
	return filepath.Join(append([]string{sysRoot, "block"}, elem...)...)
}

// Disk returns the numbers of the whole disk called name under sysRoot/block: "vda" or "/dev/vda", or a device-mapper device as
// "/dev/mapper/<name>" or "mapper/<name>".
func Disk(sysRoot, name string) (cgroup.Device, error) {
	n := strings.TrimPrefix(name, "/dev/")
	if m, ok := strings.CutPrefix(n, "mapper/"); ok {
		dm, err := dmNamed(sysRoot, m)
		if err != nil {
			return cgroup.Device{}, err
		}
		n = dm
	}
	if !validName(n) {
		return cgroup.Device{}, fmt.Errorf("%q is not a block device name (\"vda\", \"/dev/vda\", \"/dev/mapper/<name>\")", name)
	}
	d, err := readDev(sysRoot, n)
	if errors.Is(err, fs.ErrNotExist) {
		if parts, _ := filepath.Glob(blockPath(sysRoot, "*", n, "partition")); len(parts) > 0 {
			disk := filepath.Base(filepath.Dir(filepath.Dir(parts[0])))
			return cgroup.Device{}, fmt.Errorf("%s is a partition of %s; the kernel caps whole disks only: name %s", n, disk, disk)
		}
		return cgroup.Device{}, fmt.Errorf("no block device %s in %s", n, blockPath(sysRoot))
	}
	return d, err
}

// validName reports whether n can be a kernel block device name: one path element, no glob characters.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/*?[\\")
}

func readDev(sysRoot, n string) (cgroup.Device, error) {
	s, err := readSmall(blockPath(sysRoot, n, "dev"))
	if err != nil {
		return cgroup.Device{}, err
	}
	d, err := cgroup.ParseDevice(s)
	if err != nil {
		return cgroup.Device{}, fmt.Errorf("reading %s: %w", blockPath(sysRoot, n, "dev"), err)
	}
	return d, nil
}

// dms lists the device-mapper devices with their dm/name and dm/uuid.
func dms(sysRoot string) ([]dmDevice, error) {
	paths, err := filepath.Glob(blockPath(sysRoot, "dm-*"))
	if err != nil {
		return nil, err
	}
	var out []dmDevice
	for _, p := range paths {
		name, nerr := readSmall(filepath.Join(p, "dm", "name"))
		uuid, uerr := readSmall(filepath.Join(p, "dm", "uuid"))
		if nerr != nil || uerr != nil {
			continue // removed while listing
		}
		out = append(out, dmDevice{dev: filepath.Base(p), name: name, uuid: uuid})
	}
	return out, nil
}

type dmDevice struct{ dev, name, uuid string }

func dmNamed(sysRoot, name string) (string, error) {
	all, err := dms(sysRoot)
	if err != nil {
		return "", fmt.Errorf("listing device-mapper devices: %w", err)
	}
	for _, d := range all {
		if d.name == name {
			return d.dev, nil
		}
	}
	return "", fmt.Errorf("no device-mapper device named %q in %s", name, blockPath(sysRoot, "dm-*", "dm", "name"))
}

// VolumeGroupDisks returns the disks under the active logical volumes of LVM volume group vg, sorted.
func VolumeGroupDisks(sysRoot, vg string) ([]cgroup.Device, error) {
	all, err := dms(sysRoot)
	if err != nil {
		return nil, fmt.Errorf("listing device-mapper devices: %w", err)
	}
	var disks []cgroup.Device
	lvs := 0
	for _, d := range all {
		if !strings.HasPrefix(d.uuid, "LVM-") || lvmVG(d.name) != vg {
			continue
		}
		lvs++
		if disks, err = disksUnder(sysRoot, d.dev, disks, 0); err != nil {
			return nil, fmt.Errorf("volume group %q: %w", vg, err)
		}
	}
	if lvs == 0 {
		return nil, fmt.Errorf("no active logical volume of volume group %q in %s", vg, blockPath(sysRoot, "dm-*"))
	}
	slices.SortFunc(disks, func(a, b cgroup.Device) int {
		if a.Major != b.Major {
			return int(a.Major) - int(b.Major)
		}
		return int(a.Minor) - int(b.Minor)
	})
	return slices.Compact(disks), nil
}

// maxStack is how deep device-mapper devices are followed down (LVM on dm-crypt on multipath is three).
const maxStack = 8

// disksUnder appends the whole disks under device-mapper device dev to disks: its slaves, a partition's disk for
// a partition, and the same again for a slave that is itself a device-mapper device.
func disksUnder(sysRoot, dev string, disks []cgroup.Device, depth int) ([]cgroup.Device, error) {
	if depth >= maxStack {
		return nil, fmt.Errorf("%s: device-mapper devices stacked deeper than %d", dev, maxStack)
	}
	slaves, err := os.ReadDir(blockPath(sysRoot, dev, "slaves"))
	if err != nil {
		return nil, fmt.Errorf("reading the devices under %s: %w", dev, err)
	}
	for _, e := range slaves {
		n := e.Name()
		if strings.HasPrefix(n, "dm-") {
			if disks, err = disksUnder(sysRoot, n, disks, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := os.Stat(blockPath(sysRoot, n, "dev")); err != nil && validName(n) {
			// A partition: its directory is inside its disk's.
			if parts, _ := filepath.Glob(blockPath(sysRoot, "*", n, "partition")); len(parts) > 0 {
				n = filepath.Base(filepath.Dir(filepath.Dir(parts[0])))
			}
		}
		d, err := readDev(sysRoot, n)
		if err != nil {
			return nil, fmt.Errorf("device %s under %s: %w", n, dev, err)
		}
		disks = append(disks, d)
	}
	return disks, nil
}

// lvmVG is the volume group part of an LVM device-mapper name: LVM joins VG and LV with "-" and writes a "-"
// inside either as "--", so the first lone "-" separates them.
func lvmVG(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			i++
			continue
		}
		return strings.ReplaceAll(name[:i], "--", "-")
	}
	return ""
}
