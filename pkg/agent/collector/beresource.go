package collector

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

// BEResourceName is the name of the best-effort resource collector.
const BEResourceName = "beresource"

// beResource samples what best-effort pods may use, request and use of CPU: the real limit of the besteffort QoS
// cgroup (the smaller of its CFS quota and its cpuset, else the node's CPUs), the sum of the CPU requests of pods
// of QoS class BE, and the besteffort cgroup's CPU usage. CPU suppression and eviction read them.
type beResource struct {
	d   Deps
	cpu *rates[struct{}]
}

// NewBEResource returns the best-effort resource collector.
func NewBEResource(d Deps) Collector { return &beResource{d: d, cpu: newRates[struct{}]()} }

func (b *beResource) Collect(ctx context.Context, round *Round) error {
	now := round.Time
	dir := b.d.Layout.QoSDir(corev1.PodQOSBestEffort)
	var samples []metriccache.Sample
	limit, limitErr := b.realLimit(dir)
	if limitErr == nil {
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPURealLimit), Value: limit})
	}
	samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPURequest), Value: requestsOfBE(round.Pods())})
	usage, usageErr := b.d.Cgroups.CPUUsage(dir)
	if usageErr == nil {
		if cores, ok := b.cpu.rate(struct{}{}, usage, now); ok {
			samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPUUsage), Value: cores})
		}
	}
	round.Append(samples...)
	return errors.Join(limitErr, usageErr)
}

// realLimit is min(quota, cpuset size) of the besteffort cgroup, in cores; the node's CPUs when neither limits it.
func (b *beResource) realLimit(dir string) (float64, error) {
	limit := -1.0
	q, err := b.d.Cgroups.CPUQuota(dir)
	if err != nil {
		return 0, fmt.Errorf("reading the best-effort CPU quota: %w", err)
	}
	if !q.Unlimited() {
		limit = q.Cores()
	}
	if cpus, err := b.d.Cgroups.CPUSet(dir); err == nil && cpus.Size() > 0 {
		if n := float64(cpus.Size()); limit < 0 || n < limit {
			limit = n
		}
	}
	if limit >= 0 {
		return limit, nil
	}
	if v, ok := b.d.Cache.Info(metriccache.InfoNodeTopology); ok {
		if t, ok := v.(*topology.Topology); ok {
			return float64(t.NumCPUs()), nil
		}
	}
	return 0, fmt.Errorf("reading the best-effort CPU limit: neither quota nor cpuset limits %s and the node's CPU count is not known yet", dir)
}

// requestsOfBE sums BECPURequest over pods, in cores.
func requestsOfBE(pods []*statesinformer.PodMeta) float64 {
	var cores float64
	for _, m := range pods {
		cores += BECPURequest(m)
	}
	return cores
}

// BECPURequest is what a pod adds to be_cpu_request, in cores: for a pod of QoS class BE its batch-cpu request
// (millicores), or its plain cpu request when it requests no batch-cpu; 0 for other pods.
func BECPURequest(m *statesinformer.PodMeta) float64 {
	if m.QoS != slov1alpha1.QoSBE {
		return 0
	}
	req := resourcehelper.PodRequests(m.Pod, resourcehelper.PodResourcesOptions{})
	if q, ok := req[slov1alpha1.BatchCPU]; ok {
		return float64(q.Value()) / 1000
	}
	return float64(req.Cpu().MilliValue()) / 1000
}
