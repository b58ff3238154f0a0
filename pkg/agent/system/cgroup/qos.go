package cgroup

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The QoS tuning files: CPU idle, memory protection and throttling, block I/O. Their v1 and v2 names are in the
// table of files.go.

// CPUIdle implements Reader.
func (f *FS) CPUIdle(dir string) (bool, error) { return f.readBool(dir, fileCPUIdle) }

// MemoryMin implements Reader.
func (f *FS) MemoryMin(dir string) (int64, error) { return f.readMax(dir, fileMemoryMin) }

// MemoryLow implements Reader.
func (f *FS) MemoryLow(dir string) (int64, error) { return f.readMax(dir, fileMemoryLow) }

// MemoryHigh implements Reader.
func (f *FS) MemoryHigh(dir string) (int64, error) { return f.readMax(dir, fileMemoryHigh) }

// MemoryOOMGroup implements Reader.
func (f *FS) MemoryOOMGroup(dir string) (bool, error) { return f.readBool(dir, fileMemoryOOMGroup) }

// IOLimits implements Reader.
func (f *FS) IOLimits(dir string) (map[Device]IOLimit, error) {
	limits := map[Device]IOLimit{}
	if f.version == V2 {
		err := f.read(dir, fileIOReadBPS, func(b []byte) error { return parseIOMax(b, limits) })
		return limits, err
	}
	for _, fl := range []file{fileIOReadBPS, fileIOWriteBPS, fileIOReadIOPS, fileIOWriteIOPS} {
		err := f.read(dir, fl, func(b []byte) error {
			return parseDeviceValues(b, func(d Device, v uint64) {
				l := limits[d]
				*ioField(&l, fl) = v
				limits[d] = l
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return limits, nil
}

// IOWeight implements Reader.
func (f *FS) IOWeight(dir string) (uint64, error) {
	var w uint64
	err := f.read(dir, fileIOWeight, func(b []byte) (err error) { w, err = parseIOWeight(b); return err })
	return w, err
}

// SetCPUIdle implements Writer.
func (f *FS) SetCPUIdle(dir string, idle bool) error {
	return f.write(dir, fileCPUIdle, boolFile(idle))
}

// SetMemoryMin implements Writer.
func (f *FS) SetMemoryMin(dir string, bytes int64) error {
	return f.write(dir, fileMemoryMin, maxFile(bytes))
}

// SetMemoryLow implements Writer.
func (f *FS) SetMemoryLow(dir string, bytes int64) error {
	return f.write(dir, fileMemoryLow, maxFile(bytes))
}

// SetMemoryHigh implements Writer.
func (f *FS) SetMemoryHigh(dir string, bytes int64) error {
	return f.write(dir, fileMemoryHigh, maxFile(bytes))
}

// SetMemoryOOMGroup implements Writer.
func (f *FS) SetMemoryOOMGroup(dir string, group bool) error {
	return f.write(dir, fileMemoryOOMGroup, boolFile(group))
}

// SetIOLimit implements Writer. On v1 a zero removes the cap (the kernel's rule for the throttle files); on v2 it
// is written as "max".
func (f *FS) SetIOLimit(dir string, dev Device, l IOLimit) error {
	if f.version == V2 {
		v := func(n uint64) string {
			if n == 0 {
				return "max"
			}
			return strconv.FormatUint(n, 10)
		}
		line := fmt.Sprintf("%s rbps=%s wbps=%s riops=%s wiops=%s", dev, v(l.ReadBPS), v(l.WriteBPS), v(l.ReadIOPS), v(l.WriteIOPS))
		return f.write(dir, fileIOReadBPS, line)
	}
	for _, fl := range []file{fileIOReadBPS, fileIOWriteBPS, fileIOReadIOPS, fileIOWriteIOPS} {
		if err := f.write(dir, fl, dev.String()+" "+strconv.FormatUint(*ioField(&l, fl), 10)); err != nil {
			return err
		}
	}
	return nil
}

// SetIOWeight implements Writer.
func (f *FS) SetIOWeight(dir string, weight uint64) error {
	v := strconv.FormatUint(weight, 10)
	if f.version == V2 {
		v = "default " + v
	}
	return f.write(dir, fileIOWeight, v)
}

func (f *FS) readBool(dir string, fl file) (bool, error) {
	var n int64
	err := f.read(dir, fl, func(b []byte) (err error) { n, err = parseInt(b); return err })
	return n != 0, err
}

func (f *FS) readMax(dir string, fl file) (int64, error) {
	var n int64
	err := f.read(dir, fl, func(b []byte) (err error) { n, err = parseMax(b); return err })
	return n, err
}

func boolFile(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// maxFile renders a v2 byte amount where negative means "max".
func maxFile(n int64) string {
	if n < 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

// ioField returns the field of l that v1 file fl holds.
func ioField(l *IOLimit, fl file) *uint64 {
	switch fl {
	case fileIOReadBPS:
		return &l.ReadBPS
	case fileIOWriteBPS:
		return &l.WriteBPS
	case fileIOReadIOPS:
		return &l.ReadIOPS
	case fileIOWriteIOPS:
		return &l.WriteIOPS
	}
	panic("cgroup: not an I/O limit file") // a programmer's error
}

// ParseDevice parses "major:minor".
func ParseDevice(s string) (Device, error) {
	maj, minor, ok := strings.Cut(s, ":")
	if !ok {
		return Device{}, fmt.Errorf("device %q is not major:minor", s)
	}
	a, err := strconv.ParseUint(maj, 10, 32)
	if err != nil {
		return Device{}, fmt.Errorf("device %q: major: %w", s, err)
	}
	b, err := strconv.ParseUint(minor, 10, 32)
	if err != nil {
		return Device{}, fmt.Errorf("device %q: minor: %w", s, err)
	}
	return Device{Major: uint32(a), Minor: uint32(b)}, nil
}

// parseDeviceValues parses a v1 throttle file: one "major:minor value" line per device.
func parseDeviceValues(b []byte, set func(Device, uint64)) error {
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return fmt.Errorf("line %q is not \"major:minor value\"", bytes.TrimSpace(line))
		}
		d, err := ParseDevice(fields[0])
		if err != nil {
			return err
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return fmt.Errorf("line %q: %w", bytes.TrimSpace(line), err)
		}
		set(d, v)
	}
	return nil
}

// parseIOMax parses v2 io.max: "major:minor rbps=N wbps=max riops=N wiops=N" per device with a cap.
func parseIOMax(b []byte, limits map[Device]IOLimit) error {
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		d, err := ParseDevice(fields[0])
		if err != nil {
			return err
		}
		var l IOLimit
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("io.max line %q: %q is not key=value", bytes.TrimSpace(line), kv)
			}
			var n uint64
			if v != "max" {
				if n, err = strconv.ParseUint(v, 10, 64); err != nil {
					return fmt.Errorf("io.max line %q: %w", bytes.TrimSpace(line), err)
				}
			}
			switch k {
			case "rbps":
				l.ReadBPS = n
			case "wbps":
				l.WriteBPS = n
			case "riops":
				l.ReadIOPS = n
			case "wiops":
				l.WriteIOPS = n
			}
		}
		limits[d] = l
	}
	return nil
}

// parseIOWeight parses blkio.bfq.weight (v1: "N", or "default N" on newer kernels) or io.weight (v2: "default N"
// then "major:minor N" lines); it returns the default weight.
func parseIOWeight(b []byte) (uint64, error) {
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		switch {
		case len(fields) == 1:
			return strconv.ParseUint(fields[0], 10, 64)
		case len(fields) == 2 && fields[0] == "default":
			return strconv.ParseUint(fields[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no default weight in %q", bytes.TrimSpace(b))
}
