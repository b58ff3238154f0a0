package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/perf"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// CPIName is the name of the cycles-per-instruction collector.
const CPIName = "cpi"

// counterGroup is an open perf.Group: what the CPI collector needs of it, so tests can count without a PMU.
type counterGroup interface {
	Read() (perf.Counts, error)
	Close()
}

// cpiCollector keeps a cycles and instructions counter group per CPU on each running container's cgroup (at most
// DeviceOptions.CPIMaxContainers, by namespace, pod and container name) and reports each container's cycles per
// instruction over the interval, and the CPI of each QoS class (its containers' cycles over their instructions).
//
// It is off by default (turn it on with --collectors=*,cpi): it needs hardware counters that many VMs lack, the
// agent needs CAP_PERFMON where perf_event_paranoid is above 0, and each container costs two counters per CPU and
// one read per CPU each round; counting cgroups also adds work to every context switch between cgroups on the
// node. Where counters are missing or forbidden it says so once and steps aside.
type cpiCollector struct {
	d     Deps
	dirs  *podDirs
	probe func() error
	open  func(cgroupDir string) (counterGroup, error)

	probed   bool
	probeErr error
	groups   map[string]*cpiContainer // by status container ID
}

// cpiContainer is one container's counters and what its gauges are labelled with.
type cpiContainer struct {
	g             counterGroup
	ns, pod, name string
	qos           slov1alpha1.QoSClass
	prev          perf.Counts
	hasPrev, seen bool
}

// NewCPI returns the CPI collector, counting cycles and instructions with perf_event_open.
func NewCPI(d Deps) Collector {
	c := newCPI(d)
	procRoot := "/proc"
	if d.Proc != nil {
		procRoot = d.Proc.Root()
	}
	var cpus []int
	c.probe = func() error {
		var err error
		if cpus, err = onlineCPUs(d.SysRoot); err != nil {
			return err
		}
		if err := perf.Probe(perf.CyclesInstructions, procRoot); err != nil {
			return err
		}
		_, err = perfEventDir(d.Cgroups, "")
		return err
	}
	c.open = func(dir string) (counterGroup, error) {
		p, err := perfEventDir(d.Cgroups, dir)
		if err != nil {
			return nil, err
		}
		return perf.OpenCgroup(p, cpus, perf.CyclesInstructions, procRoot)
	}
	return c
}

func newCPI(d Deps) *cpiCollector {
	return &cpiCollector{d: d, dirs: newPodDirs(d.Layout), groups: map[string]*cpiContainer{}}
}

// perfEventDir is the absolute directory of cgroup dir in the hierarchy the perf_event controller is attached to:
// the v2 hierarchy, or v1's perf_event one, which must be mounted.
func perfEventDir(r cgroup.Reader, dir string) (string, error) {
	fsys, ok := r.(interface {
		Dir(subsystem, dir string) string
		Version() cgroup.Version
	})
	if !ok {
		return "", fmt.Errorf("the cgroup reader %T cannot name cgroup directories: %w", r, system.ErrUnsupported)
	}
	p := fsys.Dir("perf_event", dir)
	if fsys.Version() == cgroup.V1 {
		root := fsys.Dir("perf_event", "")
		if _, err := os.Stat(root); err != nil {
			return "", fmt.Errorf("cgroup v1 without the perf_event hierarchy (%s: %s): counters cannot follow a container: %w", root, err.Error(), system.ErrUnsupported)
		}
	}
	return p, nil
}

// onlineCPUs lists the CPUs of sysRoot/devices/system/cpu/online.
func onlineCPUs(sysRoot string) ([]int, error) {
	p := filepath.Join(sysRoot, "devices", "system", "cpu", "online")
	b, err := system.ReadFile(p, 64<<10) // a CPU list of 8,192 CPUs in the worst order is under 40 KiB
	if err != nil {
		return nil, fmt.Errorf("listing the online CPUs: %w", err)
	}
	set, err := cpulist.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", p, err)
	}
	return set.List(), nil
}

func (c *cpiCollector) Collect(ctx context.Context, round *Round) error {
	if !c.probed {
		c.probed, c.probeErr = true, c.probe()
	}
	if c.probeErr != nil {
		return c.probeErr
	}
	m := c.d.Metrics.Devices
	for _, g := range c.groups {
		g.seen = false
	}
	type sums struct{ cycles, instructions uint64 }
	byQoS := map[slov1alpha1.QoSClass]*sums{}
	fail := failures{what: "counting container cycles and instructions"}
	sampled, capped := 0, 0
	for _, meta := range round.Pods() { // sorted by namespace and name
		pod := meta.Pod
		statuses := slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses)
		slices.SortFunc(statuses, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
		for _, s := range statuses {
			if s.ContainerID == "" || s.State.Running == nil {
				continue
			}
			if sampled == c.d.Devices.CPIMaxContainers {
				capped++
				continue
			}
			sampled++
			key := pod.Namespace + "/" + pod.Name + "/" + s.Name
			g, err := c.group(meta.Pod.Namespace, pod.Name, s.Name, meta.QoS, c.dirs.pod(meta), s.ContainerID)
			if err != nil {
				fail.add(key, err)
				continue
			}
			g.seen = true
			now, err := g.g.Read()
			if err != nil {
				fail.add(key, err)
				continue
			}
			prev, had := g.prev, g.hasPrev
			g.prev, g.hasPrev = now, true
			if !had || now.Leader < prev.Leader || now.Member < prev.Member {
				continue
			}
			cycles, instr := now.Leader-prev.Leader, now.Member-prev.Member
			if instr == 0 {
				continue // did not run: no CPI
			}
			m.ContainerCPI.WithLabelValues(g.ns, g.pod, g.name).Set(float64(cycles) / float64(instr))
			q := byQoS[g.qos]
			if q == nil {
				q = &sums{}
				byQoS[g.qos] = q
			}
			q.cycles += cycles
			q.instructions += instr
		}
	}
	for id, g := range c.groups {
		if !g.seen {
			g.g.Close()
			m.ContainerCPI.DeleteLabelValues(g.ns, g.pod, g.name)
			delete(c.groups, id)
		}
	}
	c.dirs.retain()
	m.QoSCPI.Reset()
	for q, s := range byQoS {
		m.QoSCPI.WithLabelValues(string(q)).Set(float64(s.cycles) / float64(s.instructions))
	}
	m.CPIContainers.WithLabelValues("sampled").Set(float64(sampled))
	m.CPIContainers.WithLabelValues("capped").Set(float64(capped))
	return fail.err(sampled)
}

// group returns the open counters of a container, opening them on its first round.
func (c *cpiCollector) group(ns, pod, name string, qos slov1alpha1.QoSClass, podDir, id string) (*cpiContainer, error) {
	if g, ok := c.groups[id]; ok {
		return g, nil
	}
	dir, err := c.dirs.container(podDir, id)
	if err != nil {
		return nil, err
	}
	g, err := c.open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err // started or ended between the listing and the open
		}
		return nil, fmt.Errorf("opening counters: %w", err)
	}
	cc := &cpiContainer{g: g, ns: ns, pod: pod, name: name, qos: qos}
	c.groups[id] = cc
	return cc, nil
}
