package resctrl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// The resources of a schemata this package manages.
const (
	// ResourceL3 is the L3 cache without CDP.
	ResourceL3 = "L3"
	// ResourceL3Code and ResourceL3Data are the L3 cache's halves with CDP on (mount option cdp).
	ResourceL3Code = "L3CODE"
	// ResourceL3Data is the data half of the L3 cache with CDP on.
	ResourceL3Data = "L3DATA"
	// ResourceMB is memory bandwidth allocation.
	ResourceMB = "MB"
)

// FS reads a resctrl file system mounted at its root (normally /sys/fs/resctrl).
type FS struct {
	root string
}

// NewFS returns an FS for the resctrl file system at root.
func NewFS(root string) *FS { return &FS{root: root} }

// Root is the directory the FS reads.
func (f *FS) Root() string { return f.root }

// Path is the path of elem under the root: Path("gleaner-BE", "tasks").
func (f *FS) Path(elem ...string) string { return filepath.Join(append([]string{f.root}, elem...)...) }

// Info is what this host offers for partitioning, from /proc/cpuinfo, /proc/mounts and the resctrl info directory.
type Info struct {
	// Vendor is the CPU's vendor_id.
	Vendor string
	// L3 is the L3 cache's allocation; nil when this host cannot partition it (Unmanaged says why).
	L3 *Cache
	// MB is memory bandwidth allocation in percent; nil when this host cannot (Unmanaged says why).
	MB *Bandwidth
	// Unmanaged says, one sentence each, which of L3 and MB is not managed and why.
	Unmanaged []string
}

// Closids is how many resource groups the hardware can hold, the root group included: the smallest num_closids of
// the resources in use (the kernel's own limit).
func (i *Info) Closids() int {
	n := 0
	for _, c := range []int{i.l3Closids(), i.mbClosids()} {
		if c > 0 && (n == 0 || c < n) {
			n = c
		}
	}
	return n
}

func (i *Info) l3Closids() int {
	if i.L3 == nil {
		return 0
	}
	return i.L3.Closids
}

func (i *Info) mbClosids() int {
	if i.MB == nil {
		return 0
	}
	return i.MB.Closids
}

// Cache is the L3 cache's allocation: info/L3 (info/L3CODE and info/L3DATA with CDP), and the cache ids of the
// root group's schemata.
type Cache struct {
	// Resources are the schemata lines a mask is written to: L3, or L3CODE and L3DATA with CDP on (both get the
	// same mask: Gleaner partitions the cache by class, not code from data).
	Resources []string
	// Mask is cbm_mask: every way, 100 % of the cache.
	Mask uint64
	// MinBits is min_cbm_bits: the fewest consecutive ways a mask may have.
	MinBits int
	// Shareable is shareable_bits: ways other agents (I/O) use too. Informational.
	Shareable uint64
	// Sparse is sparse_masks = 1: the hardware takes masks with gaps. Kernels before 6.7 lack the file: masks must
	// be contiguous there.
	Sparse bool
	// Closids is num_closids.
	Closids int
	// Domains are the cache ids, from the root group's schemata.
	Domains []int
}

// Ways is the number of ways of the cache: the bits of Mask.
func (c *Cache) Ways() int { return popcount(c.Mask) }

// Bandwidth is memory bandwidth allocation: info/MB, and the domains of the root group's MB line.
type Bandwidth struct {
	// Min is min_bandwidth: the lowest percentage the hardware takes.
	Min int64
	// Gran is bandwidth_gran: the hardware's steps are Min + N × Gran.
	Gran int64
	// DelayLinear is delay_linear. Informational.
	DelayLinear bool
	// Closids is num_closids.
	Closids int
	// Domains are the domain ids of the root group's MB line.
	Domains []int
}

// Detect reads what this host offers. The mount is this FS's root; procRoot is the host's /proc (for cpuinfo and
// mounts). It returns an error wrapping system.ErrUnsupported when resctrl is not mounted there, or when neither the
// L3 cache nor memory bandwidth can be partitioned (the message says why, for each); other errors are failed reads
// of files that should be there.
//
// The L3 cache is managed where /proc/cpuinfo lists cat_l3 (cdp_l3 as well when the mount has CDP on) and the info
// directory has L3 (L3CODE and L3DATA). Memory bandwidth is managed where cpuinfo lists mba, info has MB, and its
// values are percentages: not with the mba_MBps mount option (MBps), nor on AMD and Hygon CPUs (absolute
// bandwidth in 1/8 GB/s).
func (f *FS) Detect(procRoot string) (*Info, error) {
	if st, err := os.Stat(f.Path("info")); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("resctrl is not mounted at %s (no info directory): %w", f.root, system.ErrUnsupported)
	}
	cpu, err := readCPUInfo(filepath.Join(procRoot, "cpuinfo"))
	if err != nil {
		return nil, err
	}
	opts, err := readMountOptions(filepath.Join(procRoot, "mounts"))
	if err != nil {
		return nil, err
	}
	root, err := f.Schemata("")
	if err != nil {
		return nil, err
	}
	info := &Info{Vendor: cpu.vendor}
	if info.L3, err = f.cache(cpu, root, &info.Unmanaged); err != nil {
		return nil, err
	}
	if info.MB, err = f.bandwidth(cpu, opts, root, &info.Unmanaged); err != nil {
		return nil, err
	}
	if info.L3 == nil && info.MB == nil {
		return nil, fmt.Errorf("nothing to partition on this host: %s: %w", strings.Join(info.Unmanaged, "; "), system.ErrUnsupported)
	}
	return info, nil
}

func (f *FS) cache(cpu cpuInfo, root Schemata, unmanaged *[]string) (*Cache, error) {
	resources := []string{ResourceL3}
	flags := []string{"cat_l3"}
	if f.isDir("info", ResourceL3Code) || f.isDir("info", ResourceL3Data) {
		resources = []string{ResourceL3Code, ResourceL3Data}
		flags = append(flags, "cdp_l3")
	}
	for _, fl := range flags {
		if !cpu.flags[fl] {
			*unmanaged = append(*unmanaged, fmt.Sprintf("L3 cache: /proc/cpuinfo lacks the %s flag", fl))
			return nil, nil
		}
	}
	var c *Cache
	for _, r := range resources {
		if !f.isDir("info", r) {
			*unmanaged = append(*unmanaged, fmt.Sprintf("L3 cache: %s is missing (the kernel did not enable L3 allocation)", f.Path("info", r)))
			return nil, nil
		}
		rc, err := f.readCache(r)
		if err != nil {
			return nil, err
		}
		line, ok := root.Line(r)
		if !ok {
			*unmanaged = append(*unmanaged, fmt.Sprintf("L3 cache: the root group's schemata has no %s line", r))
			return nil, nil
		}
		rc.Domains = line.IDs()
		if c != nil && (c.Mask != rc.Mask || c.MinBits != rc.MinBits || !slices.Equal(c.Domains, rc.Domains)) {
			return nil, fmt.Errorf("reading %s: L3CODE and L3DATA differ in cbm_mask, min_cbm_bits or cache ids", f.Path("info"))
		}
		if c == nil {
			c = rc
		}
		c.Closids = min(c.Closids, rc.Closids)
	}
	c.Resources = resources
	return c, nil
}

func (f *FS) readCache(r string) (*Cache, error) {
	c := &Cache{}
	var minBits, closids int64
	var err error
	read := func(file string, parse func([]byte) error) {
		if err != nil {
			return
		}
		var b []byte
		p := f.Path("info", r, file)
		if b, err = os.ReadFile(p); err != nil {
			err = fmt.Errorf("reading %s: %w", p, err)
			return
		}
		if perr := parse(b); perr != nil {
			err = fmt.Errorf("parsing %s %q: %w", p, bytes.TrimSpace(b), perr)
		}
	}
	read("cbm_mask", func(b []byte) error {
		m, err := parseMask(b)
		if err == nil && (m == 0 || !contiguous(m)) {
			err = errors.New("not a non-empty contiguous mask")
		}
		c.Mask = m
		return err
	})
	read("min_cbm_bits", func(b []byte) (err error) { minBits, err = parseUint(b); return err })
	read("num_closids", func(b []byte) (err error) { closids, err = parseUint(b); return err })
	if err != nil {
		return nil, err
	}
	c.MinBits, c.Closids = max(int(minBits), 1), int(closids)
	// Optional files: shareable_bits (since 4.14), sparse_masks (since 6.7).
	if b, rerr := os.ReadFile(f.Path("info", r, "shareable_bits")); rerr == nil {
		c.Shareable, _ = parseMask(b)
	}
	if b, rerr := os.ReadFile(f.Path("info", r, "sparse_masks")); rerr == nil {
		c.Sparse = strings.TrimSpace(string(b)) == "1"
	}
	return c, nil
}

func (f *FS) bandwidth(cpu cpuInfo, opts map[string]bool, root Schemata, unmanaged *[]string) (*Bandwidth, error) {
	switch {
	case !cpu.flags["mba"]:
		*unmanaged = append(*unmanaged, "memory bandwidth: /proc/cpuinfo lacks the mba flag")
		return nil, nil
	case !f.isDir("info", ResourceMB):
		*unmanaged = append(*unmanaged, fmt.Sprintf("memory bandwidth: %s is missing (the kernel did not enable MBA)", f.Path("info", ResourceMB)))
		return nil, nil
	case opts["mba_MBps"]:
		*unmanaged = append(*unmanaged, "memory bandwidth: resctrl is mounted with mba_MBps, so MB values are MBps, not the percentages mbaPercent gives")
		return nil, nil
	case cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine":
		*unmanaged = append(*unmanaged, fmt.Sprintf("memory bandwidth: on %s CPUs MB values are absolute bandwidth (1/8 GB/s), not the percentages mbaPercent gives", cpu.vendor))
		return nil, nil
	}
	line, ok := root.Line(ResourceMB)
	if !ok {
		*unmanaged = append(*unmanaged, "memory bandwidth: the root group's schemata has no MB line")
		return nil, nil
	}
	b := &Bandwidth{Domains: line.IDs()}
	for _, file := range []struct {
		name string
		v    *int64
	}{{"min_bandwidth", &b.Min}, {"bandwidth_gran", &b.Gran}} {
		p := f.Path("info", ResourceMB, file.name)
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if *file.v, err = parseUint(raw); err != nil || *file.v < 0 || *file.v > 100 {
			return nil, fmt.Errorf("parsing %s %q: not a percentage", p, bytes.TrimSpace(raw))
		}
	}
	b.Gran = max(b.Gran, 1)
	p := f.Path("info", ResourceMB, "num_closids")
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	n, err := parseUint(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing %s %q: %w", p, bytes.TrimSpace(raw), err)
	}
	b.Closids = int(n)
	if raw, err := os.ReadFile(f.Path("info", ResourceMB, "delay_linear")); err == nil {
		b.DelayLinear = strings.TrimSpace(string(raw)) == "1"
	}
	return b, nil
}

// Schemata reads the schemata of group ("" for the root group).
func (f *FS) Schemata(group string) (Schemata, error) {
	p := f.Path(group, "schemata")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	s, err := ParseSchemata(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return s, nil
}

// HasGroup reports whether group exists.
func (f *FS) HasGroup(group string) bool { return f.isDir(group) }

// Tasks reads the tasks file of group ("" for the root group): the thread ids in it. A group that does not exist is
// an error wrapping fs.ErrNotExist.
func (f *FS) Tasks(group string) (map[int]bool, error) {
	p := f.Path(group, "tasks")
	fh, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	defer fh.Close()
	ids := map[int]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		id, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %q is not a task id", p, t)
		}
		ids[id] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return ids, nil
}

func (f *FS) isDir(elem ...string) bool {
	st, err := os.Stat(f.Path(elem...))
	return err == nil && st.IsDir()
}

// maxProcListing bounds the reads of /proc/cpuinfo and /proc/mounts, which grow with the machine: cpuinfo is
// read up to the first CPU's flags on x86 (a few KiB) but whole elsewhere, about 1.5 KiB per CPU, 12 MiB for
// 8,192 CPUs; mounts is about 150 bytes a mount, 16 MiB is over 100,000 mounts.
const maxProcListing = 16 << 20

func readCPUInfo(p string) (cpuInfo, error) {
	fh, err := os.Open(p)
	if err != nil {
		return cpuInfo{}, fmt.Errorf("reading the CPU's flags: %w", err)
	}
	defer fh.Close()
	c, err := parseCPUInfo(system.LimitReader(fh, maxProcListing))
	if err != nil {
		return cpuInfo{}, fmt.Errorf("reading the CPU's flags from %s: %w", p, err)
	}
	return c, nil
}

// readMountOptions reads the resctrl mount's options; a missing mounts file or line gives none (the defaults).
func readMountOptions(p string) (map[string]bool, error) {
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the resctrl mount options: %w", err)
	}
	defer fh.Close()
	opts, _, err := parseMountOptions(system.LimitReader(fh, maxProcListing))
	if err != nil {
		return nil, fmt.Errorf("reading the resctrl mount options from %s: %w", p, err)
	}
	if opts == nil {
		opts = map[string]bool{}
	}
	return opts, nil
}
