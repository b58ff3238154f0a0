package colocation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 100 on every Linux architecture Kubernetes runs on).
const userHZ = 100

// Class is a group of the node's processes whose CPU time is measured from its cgroup: the service's pod, the
// besteffort QoS cgroup that holds the batch pods.
type Class struct {
	// Name names the class in reports.
	Name string
	// Usage is the file with the cgroup's CPU time: cgroup v1's cpuacct.usage (nanoseconds), or cgroup v2's
	// cpu.stat (its usage_usec).
	Usage string
	// Stat is the cgroup's cpu.stat, for nr_throttled (on v2 the same file as Usage); "" for none.
	Stat string
}

// Snapshot is the node's and the classes' CPU counters at one moment.
type Snapshot struct {
	// At is when it was read.
	At time.Time
	// Busy and Total are the CPU time of all CPUs from /proc/stat: Total every state's, Busy all but idle and iowait.
	// Steal is the part of Busy the hypervisor gave other machines while this one had work to run.
	Busy, Total, Steal time.Duration
	// Used is each class's CPU time, Throttled its count of throttled CFS periods, by class name.
	Used      map[string]time.Duration
	Throttled map[string]uint64
}

// Reader reads Snapshots.
type Reader struct {
	// ProcStat is /proc/stat.
	ProcStat string
	// Classes are the classes to read.
	Classes []Class
}

// Read reads a Snapshot; a class whose files cannot be read is an error naming it.
func (r Reader) Read() (Snapshot, error) {
	s := Snapshot{At: time.Now(), Used: map[string]time.Duration{}, Throttled: map[string]uint64{}}
	b, err := os.ReadFile(r.ProcStat)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading the node's CPU times: %w", err)
	}
	if s.Busy, s.Total, s.Steal, err = parseProcStat(b); err != nil {
		return Snapshot{}, fmt.Errorf("reading the node's CPU times from %s: %w", r.ProcStat, err)
	}
	for _, c := range r.Classes {
		if s.Used[c.Name], err = readUsage(c.Usage); err != nil {
			return Snapshot{}, fmt.Errorf("reading the CPU time of class %s: %w", c.Name, err)
		}
		if c.Stat == "" {
			continue
		}
		if s.Throttled[c.Name], err = statField(c.Stat, "nr_throttled"); err != nil {
			return Snapshot{}, fmt.Errorf("reading the throttling of class %s: %w", c.Name, err)
		}
	}
	return s, nil
}

// parseProcStat reads the "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal (guest time is
// already in user and nice).
func parseProcStat(b []byte) (busy, total, steal time.Duration, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 5 {
			return 0, 0, 0, fmt.Errorf("the cpu line has %d fields, want at least 4 times", len(fields)-1)
		}
		var idle, all, stolen uint64
		for i, f := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("the cpu line's field %d: %w", i+1, err)
			}
			all += v
			switch i {
			case 3, 4: // idle, iowait
				idle += v
			case 7:
				stolen = v
			}
		}
		tick := time.Second / userHZ
		return time.Duration(all-idle) * tick, time.Duration(all) * tick, time.Duration(stolen) * tick, nil
	}
	return 0, 0, 0, fmt.Errorf("no cpu line")
}

// readUsage reads a cgroup's CPU time from cpuacct.usage (v1) or cpu.stat's usage_usec (v2).
func readUsage(file string) (time.Duration, error) {
	if strings.HasSuffix(file, "cpu.stat") {
		us, err := statField(file, "usage_usec")
		return time.Duration(us) * time.Microsecond, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return time.Duration(ns), nil
}

// statField reads one "key value" line of a flat-keyed cgroup file.
func statField(file, key string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", file, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s has no %s", file, key)
}

// Use is the CPU used between two snapshots, as shares of all of the node's CPUs (1 = every CPU busy throughout).
type Use struct {
	// Node is the busy share of the node; Steal the share the hypervisor took (counted in Node: a virtual machine
	// whose CPUs are busy competes with its neighbours on the host).
	Node  float64 `json:"node"`
	Steal float64 `json:"steal"`
	// Classes is each class's share; Other is the node's busy share the classes do not account for (the system,
	// the control plane, Gleaner, the load generator), never below 0.
	Classes map[string]float64 `json:"classes"`
	Other   float64            `json:"other"`
	// Throttled is each class's count of throttled CFS periods in between.
	Throttled map[string]uint64 `json:"throttledPeriods,omitempty"`
}

// Between is the Use from a to b (b read after a). Counters that went backwards (a cgroup made again) count as 0.
func Between(a, b Snapshot) Use {
	u := Use{Classes: map[string]float64{}, Throttled: map[string]uint64{}}
	total := b.Total - a.Total
	if total <= 0 {
		return u
	}
	u.Node = float64(max(0, b.Busy-a.Busy)) / float64(total)
	u.Steal = float64(max(0, b.Steal-a.Steal)) / float64(total)
	other := u.Node
	for name, used := range b.Used {
		share := float64(max(0, used-a.Used[name])) / float64(total)
		u.Classes[name] = share
		other -= share
	}
	u.Other = max(0, other)
	for name, n := range b.Throttled {
		if n >= a.Throttled[name] {
			u.Throttled[name] = n - a.Throttled[name]
		}
	}
	return u
}
