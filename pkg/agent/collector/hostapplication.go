package collector

import (
	"context"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// HostApplicationName is the name of the host application collector.
const HostApplicationName = "hostapplication"

// hostApplication samples the CPU and memory of the NodeSLO's host applications from their cgroups.
type hostApplication struct {
	d     Deps
	cpu   *rates[string]
	known map[string]bool
}

// NewHostApplication returns the host application collector.
func NewHostApplication(d Deps) Collector {
	return &hostApplication{d: d, cpu: newRates[string](), known: map[string]bool{}}
}

func (h *hostApplication) Collect(ctx context.Context, round *Round) error {
	slo := h.d.States.GetNodeSLO()
	now := round.Time
	// A configured application without its cgroup is a configuration error worth reporting.
	fail := failures{what: "reading host application cgroups", strict: true}
	current := map[string]bool{}
	var samples []metriccache.Sample
	var total int
	if slo != nil {
		total = len(slo.Spec.HostApplications)
		for _, app := range slo.Spec.HostApplications {
			current[app.Name] = true
			base, parent, rel := app.CgroupLocation()
			dir := h.d.Layout.HostDir(cgroup.HostBase(base), parent, rel)
			usage, err := h.d.Cgroups.CPUUsage(dir)
			if err != nil {
				fail.add(app.Name, err)
				continue
			}
			mem, err := h.d.Cgroups.MemoryStat(dir)
			if err != nil {
				fail.add(app.Name, err)
				continue
			}
			samples = append(samples, metriccache.Sample{Key: metriccache.NamedKey(metriccache.HostAppMemoryUsage, app.Name), Value: float64(mem.Usage())})
			// The directory is part of the key: a moved application starts a new rate.
			if cores, ok := h.cpu.rate(app.Name+"\x00"+dir, usage, now); ok {
				samples = append(samples, metriccache.Sample{Key: metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name), Value: cores})
			}
		}
	}
	round.Append(samples...)
	h.cpu.retain()
	for name := range h.known {
		if !current[name] {
			h.d.Cache.Delete(func(k metriccache.Key) bool {
				return k.Name == name && (k.Metric == metriccache.HostAppCPUUsage || k.Metric == metriccache.HostAppMemoryUsage)
			})
		}
	}
	h.known = current
	return fail.err(total)
}
