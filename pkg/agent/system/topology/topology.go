package topology

// The files this package reads under the /sys root:
//
// devices/system/cpu/online, a CPU list:
//
//	0-3,6
//
// devices/system/cpu/cpuN/topology/{core_id,physical_package_id}, one integer each (read through procfs).
//
// devices/system/node/nodeN/cpulist, a CPU list as above, and devices/system/node/nodeN/meminfo, kB:
//
//	Node 0 MemTotal:        9529120 kB
//	Node 0 MemFree:         8485252 kB
//	Node 0 MemUsed:         1043868 kB
//	Node 0 FilePages:        309020 kB

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs/sysfs"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// CPU is one online logical CPU.
type CPU struct {
	// ID is the CPU number, as in cpuset lists.
	ID int
	// Core is the core ID within its socket (topology/core_id); hyperthreads of one core share it.
	Core int
	// Socket is the physical package ID.
	Socket int
	// Node is the NUMA node the CPU belongs to (0 on a machine without NUMA information).
	Node int
}

// NUMANode is one NUMA node.
type NUMANode struct {
	// ID is the node number.
	ID int
	// CPUs are the node's online CPUs.
	CPUs cpuset.CPUSet
	// MemTotal is the node's memory in bytes.
	MemTotal uint64
	// MemFree is the node's free memory in bytes when it was read.
	MemFree uint64
}

// Topology is the node's CPU and NUMA layout.
type Topology struct {
	// CPUs are the online CPUs, by ID.
	CPUs []CPU
	// Nodes are the NUMA nodes, by ID. A kernel without NUMA information gives one node 0 holding every CPU and no
	// memory figures.
	Nodes []NUMANode
}

// NumCPUs is the number of online logical CPUs.
func (t *Topology) NumCPUs() int { return len(t.CPUs) }

// NumCores is the number of physical cores with an online CPU.
func (t *Topology) NumCores() int {
	type core struct{ socket, core int }
	seen := map[core]bool{}
	for _, c := range t.CPUs {
		seen[core{c.Socket, c.Core}] = true
	}
	return len(seen)
}

// NumSockets is the number of sockets with an online CPU.
func (t *Topology) NumSockets() int {
	seen := map[int]bool{}
	for _, c := range t.CPUs {
		seen[c.Socket] = true
	}
	return len(seen)
}

// CPUSet is the set of online CPUs.
func (t *Topology) CPUSet() cpuset.CPUSet {
	ids := make([]int, len(t.CPUs))
	for i, c := range t.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

// Read reads the topology under sysRoot (normally "/sys").
func Read(sysRoot string) (*Topology, error) { return Refresh(sysRoot, nil) }

// Refresh reads the topology under sysRoot again after prev (nil: from scratch). The CPUs' cores and sockets,
// four files per CPU, are read again only when the set of online CPUs changed; the NUMA nodes' memory always is.
// prev is not modified.
func Refresh(sysRoot string, prev *Topology) (*Topology, error) {
	online, err := readCPUList(filepath.Join(sysRoot, "devices/system/cpu/online"))
	if err != nil {
		return nil, fmt.Errorf("reading the online CPUs: %w", err)
	}
	t := &Topology{}
	if prev != nil && prev.CPUSet().Equals(online) {
		t.CPUs = slices.Clone(prev.CPUs)
	} else if t.CPUs, err = readCPUs(sysRoot, online); err != nil {
		return nil, err
	}
	if t.Nodes, err = readNodes(sysRoot, online); err != nil {
		return nil, err
	}
	if len(t.Nodes) == 0 {
		t.Nodes = []NUMANode{{ID: 0, CPUs: t.CPUSet()}}
	}
	for i := range t.CPUs {
		for _, n := range t.Nodes {
			if n.CPUs.Contains(t.CPUs[i].ID) {
				t.CPUs[i].Node = n.ID
			}
		}
	}
	return t, nil
}

// readCPUs reads the core and socket of each online CPU, sorted by ID.
func readCPUs(sysRoot string, online cpuset.CPUSet) ([]CPU, error) {
	s, err := sysfs.NewFS(sysRoot)
	if err != nil {
		return nil, fmt.Errorf("opening sysfs at %s: %w", sysRoot, err)
	}
	cpus, err := s.CPUs()
	if err != nil {
		return nil, fmt.Errorf("listing CPUs under %s: %w", sysRoot, err)
	}
	var out []CPU
	for _, c := range cpus {
		id, err := strconv.Atoi(c.Number())
		if err != nil || !online.Contains(id) {
			continue
		}
		topo, err := c.Topology()
		if err != nil {
			return nil, fmt.Errorf("reading the topology of CPU %d: %w", id, err)
		}
		core, err1 := strconv.Atoi(topo.CoreID)
		socket, err2 := strconv.Atoi(topo.PhysicalPackageID)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("reading the topology of CPU %d: %w", id, err)
		}
		out = append(out, CPU{ID: id, Core: core, Socket: socket})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no online CPU with topology under %s", sysRoot)
	}
	slices.SortFunc(out, func(a, b CPU) int { return a.ID - b.ID })
	return out, nil
}

// readNodes reads every devices/system/node/nodeN; none (a kernel without NUMA) is not an error.
func readNodes(sysRoot string, online cpuset.CPUSet) ([]NUMANode, error) {
	dirs, err := filepath.Glob(filepath.Join(sysRoot, "devices/system/node/node[0-9]*"))
	if err != nil {
		return nil, fmt.Errorf("listing NUMA nodes: %w", err)
	}
	var nodes []NUMANode
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
		if err != nil {
			return nil, fmt.Errorf("reading the CPUs of NUMA node %d: %w", id, err)
		}
		n := NUMANode{ID: id, CPUs: cpus.Intersection(online)}
		b, err := system.ReadFile(filepath.Join(dir, "meminfo"), maxSysFile)
		if err != nil {
			return nil, fmt.Errorf("reading the memory of NUMA node %d: %w", id, err)
		}
		n.MemTotal, n.MemFree, err = parseNodeMeminfo(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("reading the memory of NUMA node %d: %w", id, err)
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b NUMANode) int { return a.ID - b.ID })
	return nodes, nil
}

// maxSysFile bounds the reads of a CPU list (a list of every other one of 8,192 CPUs is 40 KB) and a NUMA node's
// meminfo (about 30 lines of under 50 bytes).
const maxSysFile = 256 << 10

func readCPUList(path string) (cpuset.CPUSet, error) {
	b, err := system.ReadFile(path, maxSysFile)
	if err != nil {
		return cpuset.CPUSet{}, err
	}
	s, err := cpulist.Parse(string(b))
	if err != nil {
		return cpuset.CPUSet{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	return s, nil
}

// parseNodeMeminfo returns MemTotal and MemFree, in bytes, of a node's meminfo; both must be present, and neither
// above system.MaxMemoryBytes.
func parseNodeMeminfo(r io.Reader) (total, free uint64, err error) {
	var haveTotal, haveFree bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// "Node", id, key, value, optional unit.
		if len(f) < 4 || f[0] != "Node" {
			return 0, 0, fmt.Errorf("malformed line %q", sc.Text())
		}
		var dst *uint64
		switch f[2] {
		case "MemTotal:":
			dst, haveTotal = &total, true
		case "MemFree:":
			dst, haveFree = &free, true
		default:
			continue
		}
		v, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("malformed line %q: %w", sc.Text(), err)
		}
		limit := uint64(system.MaxMemoryBytes)
		if len(f) == 5 && f[4] == "kB" {
			limit >>= 10
		}
		if v > limit {
			return 0, 0, fmt.Errorf("malformed line %q: more than 4 PiB, the most memory any machine Linux runs on can address", sc.Text())
		}
		if len(f) == 5 && f[4] == "kB" {
			v <<= 10
		}
		*dst = v
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !haveTotal || !haveFree {
		return 0, 0, fmt.Errorf("MemTotal or MemFree missing: %w", fs.ErrNotExist)
	}
	return total, free, nil
}
