package collector

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// SystemResourceName is the name of the system resource collector.
const SystemResourceName = "sysresource"

// systemResource derives what the node uses outside pods and host applications (kernel, kubelet, container
// runtime, other daemons): max(node - pods - host applications, 0), for CPU and memory, from the samples the node,
// pod and host application collectors took in the same round.
type systemResource struct {
	d Deps
	// started is set once node usage was there: until then its absence is the agent starting, not a failure.
	started bool
	// unmeasuredSince is when each running pod without any sample was first seen so; within unmeasuredGrace that
	// is a pod (or the agent) just started, after it a pod the pod collector cannot measure, which is reported.
	unmeasuredSince map[string]time.Time
}

// unmeasuredGrace is how long a running pod may go without its first sample before the round reports it.
const unmeasuredGrace = 30 * time.Second

// NewSystemResource returns the system resource collector.
func NewSystemResource(d Deps) Collector {
	return &systemResource{d: d, unmeasuredSince: map[string]time.Time{}}
}

func (s *systemResource) Collect(_ context.Context, round *Round) error {
	cpu, okCPU := round.Value(metriccache.NodeKey(metriccache.NodeCPUUsage))
	mem, okMem := round.Value(metriccache.NodeKey(metriccache.NodeMemoryUsage))
	if !okCPU && !okMem {
		if !s.started {
			return nil
		}
		return fmt.Errorf("deriving system usage: the %s collector took no node usage this round", NodeResourceName)
	}
	s.started = true
	podCPU, podMem, podCPUComplete, podErr := s.podUsage(round)
	cpu, mem, okCPU = cpu-podCPU, mem-podMem, okCPU && podCPUComplete
	if slo := s.d.States.GetNodeSLO(); slo != nil {
		for _, app := range slo.Spec.HostApplications {
			// An application whose cgroup could not be read this round subtracts nothing: its usage counts as
			// the system's until it is measured again (the host application collector reports the failure).
			c, okC := round.Value(metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name))
			b, okB := round.Value(metriccache.NamedKey(metriccache.HostAppMemoryUsage, app.Name))
			// An application measured once has memory but no CPU rate yet (that takes two reads): subtracting
			// nothing for it would charge its CPU to the system, so the system's CPU waits a round instead.
			if okB && !okC {
				okCPU = false
			}
			cpu, mem = cpu-c, mem-b
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
	round.Append(samples...)
	return podErr
}

// podUsage sums the usage of the round's pods for the system usage to leave out, from their samples of this
// round. A pod measured once has memory but no CPU rate yet (that takes two reads): cpuComplete is then false and
// the system's CPU waits a round.
//
// A running pod without a sample this round (its reads fail, or its first read is still to come) must still be
// left out, or the system usage takes it in and the manager subtracts it from the batch capacity twice (as system
// usage and at its request, as a pod without metric). Its last known usage, of any age the cache keeps, stands in;
// a pod never measured counts at its requests, which keeps the total the manager subtracts (system usage plus pods,
// the unmeasured one at its request) equal to what the node uses. After unmeasuredGrace, such pods are reported.
func (s *systemResource) podUsage(round *Round) (cpu, mem float64, cpuComplete bool, err error) {
	cpuComplete = true
	now := round.Time
	var unmeasured []string
	var seen map[string]bool
	for _, m := range round.Pods() {
		uid := string(m.Pod.UID)
		cpuKey, memKey := metriccache.PodKey(metriccache.PodCPUUsage, uid), metriccache.PodKey(metriccache.PodMemoryUsage, uid)
		c, okC := round.Value(cpuKey)
		b, okB := round.Value(memKey)
		if okB || m.Pod.Status.Phase != corev1.PodRunning {
			cpuComplete = cpuComplete && (okC || !okB)
			cpu, mem = cpu+c, mem+b
			continue
		}
		c, okC = s.lastKnown(cpuKey, now)
		b, okB = s.lastKnown(memKey, now)
		if okC && okB {
			cpu, mem = cpu+c, mem+b
			continue
		}
		req := resourcehelper.PodRequests(m.Pod, resourcehelper.PodResourcesOptions{})
		cpu += req.Cpu().AsApproximateFloat64()
		mem += req.Memory().AsApproximateFloat64()
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[uid] = true
		if _, ok := s.unmeasuredSince[uid]; !ok {
			s.unmeasuredSince[uid] = now
		}
		if now.Sub(s.unmeasuredSince[uid]) >= unmeasuredGrace {
			unmeasured = append(unmeasured, m.Key())
		}
	}
	maps.DeleteFunc(s.unmeasuredSince, func(uid string, _ time.Time) bool { return !seen[uid] })
	if len(unmeasured) > 0 {
		err = fmt.Errorf("%d running pods not measured for %s, counted at their requests (%s)", len(unmeasured), unmeasuredGrace, firstNames(unmeasured, 5))
	}
	return cpu, mem, cpuComplete, err
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

// firstNames lists at most n of names, and how many more there are.
func firstNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
