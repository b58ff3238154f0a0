package collector

import (
	"context"
	"errors"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// NodeResourceName is the name of the node resource collector.
const NodeResourceName = "noderesource"

// nodeResource samples the node's CPU (busy time of /proc/stat over wall time) and memory (MemTotal -
// MemAvailable).
type nodeResource struct {
	d   Deps
	cpu *rates[struct{}]
}

// NewNodeResource returns the node resource collector.
func NewNodeResource(d Deps) Collector { return &nodeResource{d: d, cpu: newRates[struct{}]()} }

func (n *nodeResource) Collect(ctx context.Context, round *Round) error {
	now := round.Time
	t, cpuErr := n.d.Proc.CPUTime()
	m, memErr := n.d.Proc.MemInfo()
	var samples []metriccache.Sample
	if cpuErr == nil {
		if cores, ok := n.cpu.rate(struct{}{}, t.Busy, now); ok {
			samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeCPUUsage), Value: cores})
			n.d.Metrics.NodeCPUUsage.Set(cores)
		}
	}
	if memErr == nil {
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeMemoryUsage), Value: float64(m.Used())})
		n.d.Metrics.NodeMemoryUsage.Set(float64(m.Used()))
	}
	round.Append(samples...)
	return errors.Join(cpuErr, memErr)
}
