package qosmanagertest

import (
	"context"
	"sync"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// Pressure records what a plugin publishes of the node's memory pressure, in place of the NodeMetric reporter.
// With Fail set, every write fails with it (the reports still carry the value, as the reporter's do).
type Pressure struct {
	Fail error
	// OnWrite, when set, is called with each value written, before the write returns: a test sees there what the
	// plugin had done by then (which evictions it had asked for).
	OnWrite func(mp *slov1alpha1.MemoryPressure)

	mu      sync.Mutex
	current *slov1alpha1.MemoryPressure
	writes  []*slov1alpha1.MemoryPressure
	failed  int
}

var _ qosmanager.PressureReporter = &Pressure{}

// SetMemoryPressure implements qosmanager.PressureReporter.
func (p *Pressure) SetMemoryPressure(mp *slov1alpha1.MemoryPressure) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = mp.DeepCopy()
}

// WriteMemoryPressure implements qosmanager.PressureReporter.
func (p *Pressure) WriteMemoryPressure(_ context.Context, mp *slov1alpha1.MemoryPressure) error {
	p.mu.Lock()
	p.current = mp.DeepCopy()
	fail, onWrite := p.Fail, p.OnWrite
	if fail == nil {
		p.writes = append(p.writes, mp.DeepCopy())
	} else {
		p.failed++
	}
	p.mu.Unlock()
	if fail != nil {
		return fail
	}
	if onWrite != nil {
		onWrite(mp.DeepCopy())
	}
	return nil
}

// Current is what the NodeMetric reports would say now: the last value set or written; nil for none.
func (p *Pressure) Current() *slov1alpha1.MemoryPressure {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current.DeepCopy()
}

// Writes are the values written, in order (failed writes left out); a nil entry removed the memory pressure.
func (p *Pressure) Writes() []*slov1alpha1.MemoryPressure {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*slov1alpha1.MemoryPressure, len(p.writes))
	for i, w := range p.writes {
		out[i] = w.DeepCopy()
	}
	return out
}

// Failed is how many writes failed (with Fail set).
func (p *Pressure) Failed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}
