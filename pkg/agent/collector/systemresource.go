package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// SystemResourceName is the name of the system resource collector.
const SystemResourceName = "sysresource"

// systemResource derives what the node uses outside pods and host applications (kernel, kubelet, container
// runtime, other daemons): max(node - pods - host applications, 0), for CPU and memory, from the latest samples
// of the node, pod and host application collectors.
type systemResource struct {
	d Deps
	// started is set once node usage was there: until then its absence is the agent starting, not a failure.
	started bool
}

// NewSystemResource returns the system resource collector.
func NewSystemResource(d Deps) Collector { return &systemResource{d: d} }

func (s *systemResource) Collect(ctx context.Context) error {
	now := s.d.Clock.Now()
	// Samples older than a few rounds are stale: their collector has stopped or fails.
	start := now.Add(-max(3*s.d.Interval, 3*time.Second))
	last := func(k metriccache.Key) (float64, bool) {
		r, ok := s.d.Cache.Query(k, start, now)
		if !ok {
			return 0, false
		}
		return r.Value(metriccache.Last), true
	}
	cpu, okCPU := last(metriccache.NodeKey(metriccache.NodeCPUUsage))
	mem, okMem := last(metriccache.NodeKey(metriccache.NodeMemoryUsage))
	if !okCPU && !okMem {
		if !s.started {
			return nil
		}
		return fmt.Errorf("deriving system usage: no node usage since %s (is the %s collector running?)", start.Format(time.RFC3339), NodeResourceName)
	}
	s.started = true
	// A pod or application measured once has memory but no CPU rate yet (that takes two reads): subtracting
	// nothing for it would charge its CPU to the system, so the system's CPU waits a round instead.
	subtract := func(cpuKey, memKey metriccache.Key) {
		c, okC := last(cpuKey)
		b, okB := last(memKey)
		if okB && !okC {
			okCPU = false
		}
		cpu, mem = cpu-c, mem-b
	}
	for _, m := range s.d.States.GetAllPods() {
		uid := string(m.Pod.UID)
		subtract(metriccache.PodKey(metriccache.PodCPUUsage, uid), metriccache.PodKey(metriccache.PodMemoryUsage, uid))
	}
	if slo := s.d.States.GetNodeSLO(); slo != nil {
		for _, app := range slo.Spec.HostApplications {
			subtract(metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name), metriccache.NamedKey(metriccache.HostAppMemoryUsage, app.Name))
		}
	}
	// The node's CPU needs two rounds for a rate; until then only memory has a value.
	var samples []metriccache.Sample
	if okCPU {
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.SystemCPUUsage), Value: max(cpu, 0)})
	}
	if okMem {
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.SystemMemoryUsage), Value: max(mem, 0)})
	}
	s.d.Cache.Append(now, samples...)
	return nil
}
