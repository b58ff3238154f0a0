package collector

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	// A running pod without a recent sample (its reads fail, or its first read is still to come) would be charged
	// to the system in full, and the manager would take it off the batch capacity. Its last known usage, of any
	// age the cache keeps, stands in; a running pod never measured makes this round skip the system sample.
	var unmeasured []string
	for _, m := range s.d.States.GetAllPods() {
		uid := string(m.Pod.UID)
		cpuKey, memKey := metriccache.PodKey(metriccache.PodCPUUsage, uid), metriccache.PodKey(metriccache.PodMemoryUsage, uid)
		if _, recent := last(memKey); recent || m.Pod.Status.Phase != corev1.PodRunning {
			subtract(cpuKey, memKey)
			continue
		}
		c, okC := s.lastKnown(cpuKey, now)
		b, okB := s.lastKnown(memKey, now)
		if !okC || !okB {
			unmeasured = append(unmeasured, m.Key())
			continue
		}
		cpu, mem = cpu-c, mem-b
	}
	if slo := s.d.States.GetNodeSLO(); slo != nil {
		for _, app := range slo.Spec.HostApplications {
			subtract(metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name), metriccache.NamedKey(metriccache.HostAppMemoryUsage, app.Name))
		}
	}
	if len(unmeasured) > 0 {
		return fmt.Errorf("no system usage this round: %d running pods never measured (%s)", len(unmeasured), strings.Join(unmeasured, ", "))
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

// lastKnown is the latest value of k the cache still holds, however old.
func (s *systemResource) lastKnown(k metriccache.Key, now time.Time) (float64, bool) {
	r, ok := s.d.Cache.Query(k, now.Add(-lastKnownWindow), now)
	if !ok {
		return 0, false
	}
	return r.Value(metriccache.Last), true
}

// lastKnownWindow reaches back over the coarse ring of the default cache (120 slots of 30s).
const lastKnownWindow = time.Hour
