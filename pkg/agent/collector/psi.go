package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// PSIName is the name of the pressure stall information collector.
const PSIName = "psi"

// psi samples the share of time tasks stalled on CPU, memory and I/O ("some": at least one task; "full": all
// non-idle tasks), from the growth of the stall totals between rounds: the node's from /proc/pressure, each pod's
// from its cgroup on cgroup v2 (cgroup v1 has no per-cgroup pressure; the collector says so once and measures the
// node only).
type psi struct {
	d         Deps
	dirs      *podDirs
	stall     *rates[stallKey]
	v1Noticed bool
}

// stallKey names one stall total: a pod's ("" for the node) resource and line ("cpu/some").
type stallKey struct {
	pod, name string
}

// stallNames are the series names of each resource's some and full lines, built once instead of per reading.
var stallNames = func() map[system.PSIResource][2]string {
	m := map[system.PSIResource][2]string{}
	for _, r := range system.PSIResources() {
		m[r] = [2]string{string(r) + "/some", string(r) + "/full"}
	}
	return m
}()

// NewPSI returns the pressure collector.
func NewPSI(d Deps) Collector {
	return &psi{d: d, dirs: newPodDirs(d.Layout), stall: newRates[stallKey]()}
}

func (p *psi) Collect(ctx context.Context, round *Round) error {
	now := round.Time
	var samples []metriccache.Sample
	var errs []error
	for _, r := range system.PSIResources() {
		s, err := p.d.Proc.Pressure(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		samples = p.add(samples, "", r, s, now)
	}
	pods := round.Pods()
	if p.d.CgroupVersion == cgroup.V2 {
		fail := failures{what: "reading pod pressure"}
		for _, m := range pods {
			dir := p.dirs.pod(m)
			for _, r := range system.PSIResources() {
				s, err := p.d.Cgroups.Pressure(dir, r)
				if err != nil {
					fail.add(m.Key(), err)
					break
				}
				samples = p.add(samples, string(m.Pod.UID), r, s, now)
			}
		}
		errs = append(errs, fail.err(len(pods)))
	} else if !p.v1Noticed {
		p.v1Noticed = true
		errs = append(errs, fmt.Errorf("per-pod pressure needs cgroup v2, measuring the node only: %w", system.ErrUnsupported))
	}
	round.Append(samples...)
	p.stall.retain()
	p.dirs.retain()
	return errors.Join(errs...)
}

// add appends the stall shares of one pressure reading ("" pod = the node).
func (p *psi) add(samples []metriccache.Sample, pod string, r system.PSIResource, s procfs.PSIStats, now time.Time) []metriccache.Sample {
	names := stallNames[r]
	for i, line := range [2]*procfs.PSILine{s.Some, s.Full} {
		if line == nil {
			continue
		}
		share, ok := p.stall.rate(stallKey{pod: pod, name: names[i]}, time.Duration(line.Total)*time.Microsecond, now)
		if !ok {
			continue
		}
		key := metriccache.NamedKey(metriccache.NodePressure, names[i])
		if pod != "" {
			key = metriccache.PodNamedKey(metriccache.PodPressure, pod, names[i])
		}
		samples = append(samples, metriccache.Sample{Key: key, Value: min(share, 1)})
	}
	return samples
}
