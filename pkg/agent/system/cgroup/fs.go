package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// FS reads and writes cgroup files under a root: the directory holding the v1 subsystem directories
// (/sys/fs/cgroup/{cpu,cpuacct,cpuset,memory}) or the v2 unified hierarchy (/sys/fs/cgroup).
type FS struct {
	root    string
	version Version
	// buffers are the read buffers: cgroup files are at most a few KiB, so one buffer rarely grows.
	buffers sync.Pool
	files   *openFiles
}

var _ ReadWriter = &FS{}

// NewFS returns an FS for the cgroup tree at root, mounted as version v (see DetectVersion). It opens every file
// for each read; KeepOpen makes it keep them.
func NewFS(root string, v Version) *FS {
	return &FS{root: root, version: v, buffers: sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }},
		files: newOpenFiles(0)}
}

// KeepOpen makes the FS keep up to max files open between reads and re-read them with one pread each (see
// Sweep); 0 turns it off. Call it before the first read. It returns f.
func (f *FS) KeepOpen(max int) *FS {
	f.files = newOpenFiles(max)
	return f
}

// Sweep closes the kept files not read since the previous Sweep and returns how many; call it periodically (the
// collector runner does, every minute) so files of removed cgroups are let go.
func (f *FS) Sweep() int { return f.files.sweep() }

// OpenFiles is the number of files kept open.
func (f *FS) OpenFiles() int { return f.files.len() }

// Close closes every kept file. The FS stays usable.
func (f *FS) Close() { f.files.closeAll() }

// Root is the directory the FS reads.
func (f *FS) Root() string { return f.root }

// Version is the cgroup version the FS reads.
func (f *FS) Version() Version { return f.version }

// Dir returns the absolute directory of cgroup dir in the hierarchy of subsystem (v1; ignored on v2).
func (f *FS) Dir(subsystem, dir string) string {
	if f.version == V1 {
		return filepath.Join(f.root, subsystem, dir)
	}
	return filepath.Join(f.root, dir)
}

// Children implements Reader.
func (f *FS) Children(dir string) ([]string, error) {
	entries, err := os.ReadDir(f.Dir("cpu", dir))
	if err != nil {
		return nil, fmt.Errorf("listing the cgroups below %q: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// CPUUsage implements Reader.
func (f *FS) CPUUsage(dir string) (time.Duration, error) {
	if f.version == V1 {
		var ns uint64
		err := f.read(dir, fileCPUUsage, func(b []byte) (err error) { ns, err = parseUint(b); return err })
		return time.Duration(ns), err
	}
	var usage time.Duration
	err := f.read(dir, fileCPUUsage, func(b []byte) (err error) { _, usage, err = parseCPUStat(b, V2); return err })
	return usage, err
}

// CPUStat implements Reader.
func (f *FS) CPUStat(dir string) (CPUStat, error) {
	var s CPUStat
	err := f.read(dir, fileCPUStat, func(b []byte) (err error) { s, _, err = parseCPUStat(b, f.version); return err })
	return s, err
}

// CPUQuota implements Reader.
func (f *FS) CPUQuota(dir string) (CPUQuota, error) {
	if f.version == V2 {
		var q CPUQuota
		err := f.read(dir, fileCPUQuota, func(b []byte) (err error) { q, err = parseCPUMax(b); return err })
		return q, err
	}
	var quota int64
	var period uint64
	if err := f.read(dir, fileCPUQuota, func(b []byte) (err error) { quota, err = parseInt(b); return err }); err != nil {
		return CPUQuota{}, err
	}
	if err := f.read(dir, fileCPUPeriod, func(b []byte) (err error) { period, err = parseUint(b); return err }); err != nil {
		return CPUQuota{}, err
	}
	return CPUQuota{Quota: durationUs(quota), Period: limitUs(period)}, nil
}

// CPUShares implements Reader.
func (f *FS) CPUShares(dir string) (uint64, error) {
	var n uint64
	err := f.read(dir, fileCPUShares, func(b []byte) (err error) { n, err = parseUint(b); return err })
	if err == nil && f.version == V2 {
		n = WeightToShares(n)
	}
	return n, err
}

// CPUBurst implements Reader.
func (f *FS) CPUBurst(dir string) (time.Duration, error) {
	var us uint64
	err := f.read(dir, fileCPUBurst, func(b []byte) (err error) { us, err = parseUint(b); return err })
	return limitUs(us), err
}

// CPUSet implements Reader.
func (f *FS) CPUSet(dir string) (cpuset.CPUSet, error) {
	var s cpuset.CPUSet
	err := f.read(dir, fileCPUSetEffective, func(b []byte) (err error) {
		s, err = cpulist.Parse(string(b))
		return err
	})
	return s, err
}

// MemoryStat implements Reader.
func (f *FS) MemoryStat(dir string) (MemoryStat, error) {
	var m MemoryStat
	err := f.read(dir, fileMemoryStat, func(b []byte) (err error) { m, err = parseMemoryStat(b, f.version); return err })
	return m, err
}

// MemoryLimit implements Reader.
func (f *FS) MemoryLimit(dir string) (int64, error) {
	var n int64
	if f.version == V2 {
		err := f.read(dir, fileMemoryLimit, func(b []byte) (err error) { n, err = parseMax(b); return err })
		return n, err
	}
	err := f.read(dir, fileMemoryLimit, func(b []byte) (err error) { n, err = parseInt(b); return err })
	if err == nil && n >= unlimitedV1 {
		n = -1
	}
	return n, err
}

// Pressure implements Reader.
func (f *FS) Pressure(dir string, r system.PSIResource) (procfs.PSIStats, error) {
	file, ok := pressureFile(r)
	if !ok {
		return procfs.PSIStats{}, fmt.Errorf("reading the %s pressure of cgroup %q: unknown resource", r, dir)
	}
	var s procfs.PSIStats
	err := f.read(dir, file, func(b []byte) (err error) { s, err = system.ParsePressure(b); return err })
	return s, err
}

// SetCPUQuota implements Writer.
func (f *FS) SetCPUQuota(dir string, q CPUQuota) error {
	periodUs := q.Period.Microseconds()
	if f.version == V2 {
		quota := "max"
		if q.Quota >= 0 {
			quota = strconv.FormatInt(q.Quota.Microseconds(), 10)
		}
		return f.write(dir, fileCPUQuota, quota+" "+strconv.FormatInt(periodUs, 10))
	}
	if err := f.write(dir, fileCPUPeriod, strconv.FormatInt(periodUs, 10)); err != nil {
		return err
	}
	quota := int64(-1)
	if q.Quota >= 0 {
		quota = q.Quota.Microseconds()
	}
	return f.write(dir, fileCPUQuota, strconv.FormatInt(quota, 10))
}

// SetCPUShares implements Writer.
func (f *FS) SetCPUShares(dir string, shares uint64) error {
	if f.version == V2 {
		shares = SharesToWeight(shares)
	}
	return f.write(dir, fileCPUShares, strconv.FormatUint(shares, 10))
}

// SetCPUBurst implements Writer.
func (f *FS) SetCPUBurst(dir string, burst time.Duration) error {
	return f.write(dir, fileCPUBurst, strconv.FormatInt(burst.Microseconds(), 10))
}

// SetCPUSet implements Writer.
func (f *FS) SetCPUSet(dir string, cpus cpuset.CPUSet) error {
	return f.write(dir, fileCPUSet, cpus.String())
}

// SetMemoryLimit implements Writer.
func (f *FS) SetMemoryLimit(dir string, limit int64) error {
	v := strconv.FormatInt(limit, 10)
	if limit < 0 {
		v = "-1"
		if f.version == V2 {
			v = "max"
		}
	}
	return f.write(dir, fileMemoryLimit, v)
}

// path returns the file of value fl in cgroup dir, or "" when this version has no such file. Layout's directories
// are clean already, so the parts are concatenated: Join's Clean showed in the collection profile.
func (f *FS) path(dir string, fl file) (p, name string) {
	sub, v1, v2 := fileNames(fl)
	switch {
	case f.version == V1 && v1 == "", f.version == V2 && v2 == "":
		return "", ""
	case f.version == V1 && dir == "":
		return f.root + "/" + sub + "/" + v1, v1
	case f.version == V1:
		return f.root + "/" + sub + "/" + dir + "/" + v1, v1
	case dir == "":
		return f.root + "/" + v2, v2
	}
	return f.root + "/" + dir + "/" + v2, v2
}

// read reads the file of fl in dir into a pooled buffer and hands the bytes to parse (which must not keep them),
// mapping the errors as Reader documents.
func (f *FS) read(dir string, fl file, parse func([]byte) error) error {
	if _, v1, v2 := fileNames(fl); (f.version == V1 && v1 == "") || (f.version == V2 && v2 == "") {
		return fmt.Errorf("reading %s of cgroup %q: cgroup %s has no such file: %w", v1+v2, dir, f.version, system.ErrUnsupported)
	}
	buf := f.buffers.Get().(*[]byte)
	defer f.buffers.Put(buf)
	// The path is built only to open the file or to report an error: a kept file is found by (dir, value).
	b, err := f.files.read(fileKey{dir: dir, fl: fl}, func() string { p, _ := f.path(dir, fl); return p }, (*buf)[:0])
	*buf = b[:0] // keep a buffer that grew
	if err != nil {
		p, name := f.path(dir, fl)
		return f.fileError("reading", dir, p, name, err)
	}
	if err := parse(b); err != nil {
		p, _ := f.path(dir, fl)
		return fmt.Errorf("parsing %s: %w", p, err)
	}
	return nil
}

// write writes v to the file of fl in dir without creating it.
func (f *FS) write(dir string, fl file, v string) error {
	p, name := f.path(dir, fl)
	if p == "" {
		_, v1, v2 := fileNames(fl)
		return fmt.Errorf("writing %s of cgroup %q: cgroup %s has no such file: %w", v1+v2, dir, f.version, system.ErrUnsupported)
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return f.fileError("writing", dir, p, name, err)
	}
	_, err = fh.WriteString(v)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", v, p, err)
	}
	return nil
}

// fileError tells a cgroup that is gone (fs.ErrNotExist) from a file the kernel lacks (system.ErrUnsupported).
func (f *FS) fileError(op, dir, path, name string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, path, err)
	}
	if _, serr := os.Stat(filepath.Dir(path)); serr != nil {
		return fmt.Errorf("%s %s: cgroup %q does not exist: %w", op, name, dir, fs.ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, path, system.ErrUnsupported)
}
