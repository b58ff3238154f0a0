// Package resctrltest builds fixture resctrl trees for tests: a host root holding proc/cpuinfo, proc/mounts and a
// resctrl mount with its info directory and root group, as the kernel lays them out. A test writes a Host into
// t.TempDir() and points the code under test at its paths.
package resctrltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Host describes a fixture host.
type Host struct {
	// Vendor is /proc/cpuinfo's vendor_id; "" means GenuineIntel.
	Vendor string
	// Flags are /proc/cpuinfo's flags (rdt_a, cat_l3, cdp_l3, mba ...).
	Flags []string
	// Mounted says whether resctrl is mounted: without it there is no resctrl directory content and no mounts line.
	Mounted bool
	// MountOptions are the resctrl mount's options besides rw,relatime (cdp, mba_MBps).
	MountOptions []string
	// L3 is the L3 cache's info; nil leaves info/L3 out.
	L3 *L3
	// CDP splits the L3 cache into L3CODE and L3DATA, as the cdp mount option does.
	CDP bool
	// MB is the memory bandwidth info; nil leaves info/MB out.
	MB *MB
	// Domains are the cache ids.
	Domains []int
}

// L3 is info/L3.
type L3 struct {
	// Mask is cbm_mask, e.g. "7ff".
	Mask string
	// MinBits is min_cbm_bits.
	MinBits int
	// Closids is num_closids.
	Closids int
	// Sparse, when not nil, writes sparse_masks.
	Sparse *bool
}

// MB is info/MB.
type MB struct {
	// Min is min_bandwidth, Gran bandwidth_gran, Closids num_closids.
	Min, Gran, Closids int
}

// ResctrlDir is where Write puts the resctrl mount, relative to the host root.
const ResctrlDir = "sys/fs/resctrl"

// Write lays h out under root: root/proc/{cpuinfo,mounts} and root/sys/fs/resctrl/{info,schemata,tasks,...}.
func (h Host) Write(root string) error {
	vendor := h.Vendor
	if vendor == "" {
		vendor = "GenuineIntel"
	}
	var cpuinfo strings.Builder
	for cpu := range 2 {
		fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: %s\nflags\t\t: fpu vme de pse tsc %s\n\n", cpu, vendor, strings.Join(h.Flags, " "))
	}
	files := map[string]string{
		"proc/cpuinfo": cpuinfo.String(),
		"proc/mounts":  "proc /proc proc rw,nosuid 0 0\nsysfs /sys sysfs rw 0 0\n",
	}
	dir := func(elem ...string) string { return filepath.Join(append([]string{ResctrlDir}, elem...)...) }
	if err := os.MkdirAll(filepath.Join(root, ResctrlDir), 0o755); err != nil {
		return err
	}
	if h.Mounted {
		files["proc/mounts"] += fmt.Sprintf("resctrl /sys/fs/resctrl resctrl %s 0 0\n", strings.Join(append([]string{"rw", "relatime"}, h.MountOptions...), ","))
		files[dir("info", "last_cmd_status")] = "ok\n"
		files[dir("tasks")] = "1\n2\n"
		files[dir("cpus")] = "ff\n"
		var schemata strings.Builder
		if h.L3 != nil {
			resources := []string{"L3"}
			if h.CDP {
				resources = []string{"L3CODE", "L3DATA"}
			}
			for _, r := range resources {
				files[dir("info", r, "cbm_mask")] = h.L3.Mask + "\n"
				files[dir("info", r, "min_cbm_bits")] = strconv.Itoa(h.L3.MinBits) + "\n"
				files[dir("info", r, "num_closids")] = strconv.Itoa(h.L3.Closids) + "\n"
				files[dir("info", r, "shareable_bits")] = "0\n"
				if h.L3.Sparse != nil {
					files[dir("info", r, "sparse_masks")] = map[bool]string{false: "0\n", true: "1\n"}[*h.L3.Sparse]
				}
				schemata.WriteString(line(r, h.Domains, h.L3.Mask))
			}
		}
		if h.MB != nil {
			files[dir("info", "MB", "min_bandwidth")] = strconv.Itoa(h.MB.Min) + "\n"
			files[dir("info", "MB", "bandwidth_gran")] = strconv.Itoa(h.MB.Gran) + "\n"
			files[dir("info", "MB", "num_closids")] = strconv.Itoa(h.MB.Closids) + "\n"
			files[dir("info", "MB", "delay_linear")] = "1\n"
			files[dir("info", "MB", "thread_throttle_mode")] = "max\n"
			schemata.WriteString(strings.Repeat(" ", 4*btoi(h.CDP)) + line("MB", h.Domains, "100"))
		}
		files[dir("schemata")] = schemata.String()
		if err := os.MkdirAll(filepath.Join(root, dir("info")), 0o755); err != nil {
			return err
		}
	}
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func line(resource string, ids []int, v string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%d=%s", id, v))
	}
	return resource + ":" + strings.Join(parts, ";") + "\n"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Intel is a two-socket Intel host with an 11-way L3 (min_cbm_bits 1), MBA in steps of 10 from 10 %, and 16
// closids, resctrl mounted.
func Intel() Host {
	return Host{
		Flags:   []string{"rdt_a", "cat_l3", "cdp_l3", "mba", "cqm_llc"},
		Mounted: true,
		L3:      &L3{Mask: "7ff", MinBits: 1, Closids: 16},
		MB:      &MB{Min: 10, Gran: 10, Closids: 8},
		Domains: []int{0, 1},
	}
}
