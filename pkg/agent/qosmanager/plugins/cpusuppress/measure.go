package cpusuppress

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// inputs are the numbers of one decision, in cores.
type inputs struct {
	// capacity is the node's CPU capacity and reserved capacity - allocatable (the kubelet's system and kube
	// reservations), from the Node.
	capacity, reserved float64
	// node is the node's busy CPU over the window, from /proc/stat.
	node float64
	// be is the CPU of the cgroups the policy confines (the besteffort QoS cgroup, and for cpuset the best-effort
	// pods outside it) over the same window, from their cpuacct usage.
	be float64
	// beHostApps is the CPU of best-effort host applications outside those cgroups, from the metric cache: node -
	// be counts it, and it must not.
	beHostApps float64
	// system is the node's usage outside pods and host applications, from the metric cache.
	system float64
	// window is the time between the two samples.
	window time.Duration
}

// nonBE is the CPU of everything but best-effort work: services' pods and host applications, and the system.
func (in inputs) nonBE() float64 { return max(in.node-in.be-in.beHostApps, 0) }

// share is the CPU best-effort pods may use, cores, and the floor it never goes below:
//
//	share = capacity x threshold% - non-BE pods - non-BE host applications - max(system, reserved)
//	      = capacity x threshold% - nonBE - max(0, reserved - system)
//
// because nonBE (node - BE) already holds the system's usage; floor = capacity x min%.
func (in inputs) share(thresholdPercent, minPercent int64) (share, floor float64) {
	floor = in.capacity * float64(minPercent) / 100
	share = in.capacity*float64(thresholdPercent)/100 - in.nonBE() - max(in.reserved-in.system, 0)
	return max(share, floor), floor
}

// sample is what one run reads of the kernel's counters.
type sample struct {
	at   time.Time
	busy time.Duration   // the node's busy CPU time
	dirs []string        // the confined cgroups
	use  []time.Duration // their CPU time, -1 where it could not be read
}

// measure samples the node's busy time and the confined cgroups' usage and returns the inputs over the window
// since the last sample. ok is false on the first sample, and when the last one is under minWindow old.
func (p *Plugin) measure(now time.Time, confined []string, spec *slov1alpha1.NodeSLOSpec) (in inputs, ok bool, err error) {
	if !p.prev.at.IsZero() && now.Sub(p.prev.at) < minWindow {
		return in, false, nil
	}
	stat, err := p.d.Proc.StatTotal(p.buf)
	if err != nil {
		return in, false, fmt.Errorf("reading the node's CPU time: %w", err)
	}
	s := sample{at: now, busy: stat.Busy, dirs: confined, use: p.spare[:0]}
	for i, dir := range confined {
		u, err := p.d.Cgroups.CPUUsage(dir)
		switch {
		case err == nil:
		case i == 0: // the besteffort QoS cgroup itself
			return in, false, fmt.Errorf("reading the best-effort CPU usage: %w", err)
		case errors.Is(err, fs.ErrNotExist):
			u = -1 // a pod that just ended
		default:
			return in, false, fmt.Errorf("reading the CPU usage of best-effort pod cgroup %s: %w", dir, err)
		}
		s.use = append(s.use, u)
	}
	prev := p.prev
	p.prev, p.spare = s, prev.use
	if prev.at.IsZero() || s.busy < prev.busy {
		return in, false, nil
	}
	in.window = now.Sub(prev.at)
	secs := in.window.Seconds()
	in.node = (s.busy - prev.busy).Seconds() / secs
	in.be = confinedDelta(prev, s).Seconds() / secs
	if in.capacity, in.reserved, err = p.capacity(); err != nil {
		return in, false, err
	}
	in.system = p.cached(metriccache.NodeKey(metriccache.SystemCPUUsage), now)
	for _, app := range spec.HostApplications {
		if !isBestEffortApp(&app) {
			continue
		}
		base, parent, rel := app.CgroupLocation()
		if within(p.d.Layout.HostDir(cgroup.HostBase(base), parent, rel), confined) {
			continue // its usage is in be already
		}
		in.beHostApps += p.cached(metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name), now)
	}
	return in, true, nil
}

// confinedDelta is the CPU time the confined cgroups used between two samples, over the cgroups read in both; a
// counter that went back (a cgroup recreated) counts nothing.
func confinedDelta(prev, s sample) time.Duration {
	var sum time.Duration
	for i, dir := range s.dirs {
		j := i
		if j >= len(prev.dirs) || prev.dirs[j] != dir {
			j = -1
			for k, d := range prev.dirs {
				if d == dir {
					j = k
					break
				}
			}
		}
		if j < 0 || s.use[i] < 0 || prev.use[j] < 0 || s.use[i] < prev.use[j] {
			continue
		}
		sum += s.use[i] - prev.use[j]
	}
	return sum
}

// isBestEffortApp tells a host application that counts as best-effort work: its effective priority (its priority
// class, else its QoS class's) is batch or free, the rule the manager's batch plugin applies to it too.
func isBestEffortApp(a *slov1alpha1.HostApplicationSpec) bool {
	return !a.EffectivePriority().HighPriority()
}

// within reports whether cgroup dir is one of dirs or below one.
func within(dir string, dirs []string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// capacity is the node's CPU capacity and the part the kubelet reserves (capacity - allocatable), cores, from the
// Node; before the Node is known, the online CPUs with nothing reserved. The allocatable is the kubelet's own,
// before gleaner-manager's amplification (slov1alpha1.RawAllocatable): amplified, it would hide the reservation.
func (p *Plugin) capacity() (capacity, reserved float64, err error) {
	if n := p.d.States.GetNode(); n != nil {
		capacity = float64(n.Status.Capacity.Cpu().MilliValue()) / 1000
		if a, ok := slov1alpha1.RawAllocatable(n, corev1.ResourceCPU); ok && capacity > 0 {
			reserved = max(capacity-float64(a.MilliValue())/1000, 0)
		}
	}
	if capacity <= 0 {
		if t := qosmanager.NodeTopology(p.d.Cache); t != nil {
			capacity = float64(t.NumCPUs())
		}
	}
	if capacity <= 0 {
		return 0, 0, errors.New("the node's CPU capacity is not known yet: no Node with a cpu capacity and no CPU topology")
	}
	return capacity, reserved, nil
}

// cached is the last value of a collector's series within cacheWindow, 0 when there is none: a missing system
// usage leaves the reservation alone in max(system, reserved), a missing host application counts as non-BE, both
// on the safe side.
func (p *Plugin) cached(k metriccache.Key, now time.Time) float64 {
	r, ok := p.d.Cache.Query(k, now.Add(-cacheWindow), now)
	if !ok || r.Count == 0 {
		return 0
	}
	return r.Value(metriccache.Last)
}
