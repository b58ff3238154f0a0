package memoryevict

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// writeTimeout bounds a write of the memory pressure. The write goes before the evictions it lists, and an API
// server that does not answer must not hold them (or the local last resort behind them) up for long; a write that
// fails is tried again at the next run, and the NodeMetric reports carry the pressure meanwhile.
const writeTimeout = time.Second

// pressure is the node's memory-pressure episode as the plugin publishes it in the NodeMetric
// (status.memoryPressure): from the first run that finds the node's memory use above the eviction threshold until
// the use has been at or under it for the hold time, with the pods evicted for it meanwhile. gleaner-manager offers
// batch pods no new memory on the node while it lasts, so that a pod evicted here (or its replacement) is not
// placed on the node again to be evicted again.
//
// What gleaner-manager must act on before the evictions go out (an episode that starts, a pod about to be evicted,
// the end) is written at once; only the time of the latest pressure waits for the next report.
type pressure struct {
	reporter qosmanager.PressureReporter
	// state is what the NodeMetric is to say; nil when there is no episode.
	state *slov1alpha1.MemoryPressure
	// dirty says that state differs from what was last written.
	dirty bool
	// failed says that a write failed in this run (begin clears it): the run writes no more, so that an API server
	// that does not answer costs the run one writeTimeout, not one per pod.
	failed bool
}

// begin starts a run.
func (p *pressure) begin() { p.failed = false }

// observe records that the node's memory use is above the eviction threshold at now, the episode to last for hold
// after the last such run: it starts an episode or extends the current one.
func (p *pressure) observe(ctx context.Context, now time.Time, hold time.Duration) {
	if p.state == nil {
		p.state = &slov1alpha1.MemoryPressure{Since: metav1.NewTime(now)}
		p.dirty = true
		klog.FromContext(ctx).Info("node memory pressure: batch pods are offered no new memory until it has been gone for the hold", "hold", hold)
	}
	p.state.LastPressureTime = metav1.NewTime(now)
	p.state.HoldSeconds = int64(hold / time.Second)
}

// evicting lists pods as evicted for this episode, before their evictions are sent. There must be an episode.
func (p *pressure) evicting(uids ...types.UID) {
	for _, uid := range uids {
		if !slices.Contains(p.state.EvictedPods, string(uid)) {
			p.state.EvictedPods = append(p.state.EvictedPods, string(uid))
			p.dirty = true
		}
	}
	if over := len(p.state.EvictedPods) - slov1alpha1.MaxMemoryPressurePods; over > 0 {
		p.state.EvictedPods = slices.Delete(p.state.EvictedPods, 0, over)
	}
}

// notEvicted takes a pod whose eviction did not happen (refused, deferred, a dry run, an error) off the list: it
// stays on the node and still holds what it requested.
func (p *pressure) notEvicted(uid types.UID) {
	if p.state == nil {
		return
	}
	if i := slices.Index(p.state.EvictedPods, string(uid)); i >= 0 {
		p.state.EvictedPods = slices.Delete(p.state.EvictedPods, i, i+1)
		p.dirty = true
	}
}

// expire ends the episode once the node's memory use has not been above the threshold for hold (taken from the
// NodeSLO now, so that a shorter hold set during an episode applies to it).
func (p *pressure) expire(ctx context.Context, now time.Time, hold time.Duration) {
	if p.state == nil {
		return
	}
	p.state.HoldSeconds = int64(hold / time.Second)
	if now.Sub(p.state.LastPressureTime.Time) < hold {
		return
	}
	klog.FromContext(ctx).Info("node memory pressure over: batch pods are offered memory again",
		"since", p.state.Since.Time, "lastPressure", p.state.LastPressureTime.Time, "evictedPods", len(p.state.EvictedPods))
	p.end()
}

// end ends the episode at once (memory eviction switched off).
func (p *pressure) end() {
	if p.state != nil {
		p.state, p.dirty = nil, true
	}
}

// publish hands the state to the reporter: written at once when it changed since the last write (unless a write
// failed in this run), kept for the next report otherwise.
func (p *pressure) publish(ctx context.Context) error {
	if !p.dirty || p.failed {
		p.reporter.SetMemoryPressure(p.state)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := p.reporter.WriteMemoryPressure(ctx, p.state); err != nil {
		p.failed = true
		return err
	}
	p.dirty = false
	return nil
}
