package resctrl

// The files this package parses, as the kernel writes them.
//
// schemata of a group, one line per resource, "<cache id>=<value>" per domain; cache values are hexadecimal bit
// masks, MB values percentages (or MBps with the mba_MBps mount option). With CDP on (mount option cdp) L3 is split
// into L3CODE and L3DATA; the kernel pads the names to the longest one:
//
//	L3CODE:0=fffff;1=fffff
//	L3DATA:0=fffff;1=fffff
//	    MB:0=100;1=100
//
// /proc/cpuinfo, the lines read (the first CPU's; every CPU has the same features):
//
//	vendor_id	: GenuineIntel
//	flags		: fpu vme ... rdt_a ... cat_l3 cdp_l3 ... mba ...
//
// /proc/mounts, the resctrl line (mount options after the type):
//
//	resctrl /sys/fs/resctrl resctrl rw,relatime,cdp,mba_MBps 0 0

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Schemata is the text of a group's schemata file, one Line per resource, in the kernel's order.
type Schemata []Line

// Line is one resource of a schemata: its name ("L3", "L3CODE", "L3DATA", "MB", ...) and a value per domain.
type Line struct {
	// Resource is the resource's name.
	Resource string
	// Domains are its values by domain (cache id), in the order written.
	Domains []Domain
}

// Domain is the value of one resource in one domain.
type Domain struct {
	// ID is the cache id (for MB, the id of the L3 cache it belongs to).
	ID int
	// Value is the value as the file holds it: a hexadecimal mask for caches, a number for MB.
	Value string
}

// String renders s as the schemata file takes it: one line per resource, each ending in a newline.
func (s Schemata) String() string {
	var b strings.Builder
	for _, l := range s {
		b.WriteString(l.Resource)
		b.WriteByte(':')
		for i, d := range l.Domains {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(strconv.Itoa(d.ID))
			b.WriteByte('=')
			b.WriteString(d.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Line returns the line of resource, and whether s has one.
func (s Schemata) Line(resource string) (Line, bool) {
	for _, l := range s {
		if l.Resource == resource {
			return l, true
		}
	}
	return Line{}, false
}

// IDs are the domain ids of l, in the order written.
func (l Line) IDs() []int {
	ids := make([]int, len(l.Domains))
	for i, d := range l.Domains {
		ids[i] = d.ID
	}
	return ids
}

// ParseSchemata parses a schemata file. Blank lines are skipped; a line without "name:" or a domain that is not
// "<id>=<value>" is an error.
func ParseSchemata(r io.Reader) (Schemata, error) {
	var s Schemata
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		name, rest, ok := strings.Cut(text, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("parsing schemata line %d %q: want <resource>:<id>=<value>[;<id>=<value>]", n, text)
		}
		l := Line{Resource: name}
		for _, f := range strings.Split(rest, ";") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			id, v, ok := strings.Cut(f, "=")
			if !ok {
				return nil, fmt.Errorf("parsing schemata line %d %q: domain %q is not <id>=<value>", n, text, f)
			}
			i, err := strconv.Atoi(strings.TrimSpace(id))
			if err != nil || i < 0 {
				return nil, fmt.Errorf("parsing schemata line %d %q: domain id %q is not a cache id", n, text, id)
			}
			v = strings.TrimSpace(v)
			if v == "" {
				return nil, fmt.Errorf("parsing schemata line %d %q: domain %d has no value", n, text, i)
			}
			l.Domains = append(l.Domains, Domain{ID: i, Value: v})
		}
		if len(l.Domains) == 0 {
			return nil, fmt.Errorf("parsing schemata line %d %q: no domains", n, text)
		}
		s = append(s, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading schemata: %w", err)
	}
	return s, nil
}

// cpuInfo is what /proc/cpuinfo says about resctrl.
type cpuInfo struct {
	vendor string
	flags  map[string]bool
}

// parseCPUInfo reads vendor_id and flags of the first CPU listed. A file without a flags line (not x86) gives no
// flags.
func parseCPUInfo(r io.Reader) (cpuInfo, error) {
	c := cpuInfo{flags: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the flags line is a few KiB
	seenFlags := false
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "vendor_id":
			if c.vendor == "" {
				c.vendor = strings.TrimSpace(val)
			}
		case "flags":
			if !seenFlags {
				seenFlags = true
				for _, f := range strings.Fields(val) {
					c.flags[f] = true
				}
			}
		}
		if c.vendor != "" && seenFlags {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return cpuInfo{}, fmt.Errorf("reading cpuinfo: %w", err)
	}
	return c, nil
}

// parseMountOptions returns the mount options of the first resctrl file system in a mounts file, and whether one
// is listed.
func parseMountOptions(r io.Reader) (map[string]bool, bool, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[2] != "resctrl" {
			continue
		}
		opts := map[string]bool{}
		for _, o := range strings.Split(f[3], ",") {
			opts[o] = true
		}
		return opts, true, nil
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("reading mounts: %w", err)
	}
	return nil, false, nil
}

// parseUint parses a decimal info file such as min_cbm_bits.
func parseUint(b []byte) (int64, error) {
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}

// parseMask parses a hexadecimal bit mask such as cbm_mask.
func parseMask(b []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 16, 64)
}
