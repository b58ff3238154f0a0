package metriccache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Cache stores series and static information for the agent's modules. All methods are safe for concurrent use.
type Cache interface {
	// Append stores samples taken at t. A series is created on its first sample; a sample older than the series'
	// retention is dropped; two samples of one series in one fine bucket keep the later. NaN and infinite values
	// are dropped.
	Append(t time.Time, samples ...Sample)
	// Query returns the samples of key in the window (start, end]. ok is false when the series does not exist or
	// has no sample in the window. The fine ring answers windows it spans; longer windows are answered from the
	// coarse ring (Result.Resolution says which).
	Query(key Key, start, end time.Time) (r Result, ok bool)
	// Keys returns the keys for which match is true (all keys for a nil match), in no particular order.
	Keys(match func(Key) bool) []Key
	// Delete removes the series for which match is true and returns how many it removed.
	Delete(match func(Key) bool) int
	// SetInfo stores a static value under name, replacing the previous one. Values are shared, not copied:
	// store values nobody modifies afterwards.
	SetInfo(name string, v any)
	// Info returns the value stored under name.
	Info(name string) (v any, ok bool)
	// Stats reports the cache's size.
	Stats() Stats
}

// Stats is the size of a cache.
type Stats struct {
	// Series is the number of series.
	Series int
	// Bytes is the memory the series take, from Config.SeriesBytes (static information not counted).
	Bytes int64
}

// Config sizes a cache. The fine rings hold one sample per Step; the coarse rings one average per CoarseStep.
type Config struct {
	// Step is the resolution of the fine rings; collectors should not sample faster.
	Step time.Duration
	// NodeSlots is the fine-ring length of series that belong to no pod (node, system, host applications, BE),
	// which the report's longest aggregation window reads at full resolution.
	NodeSlots int
	// PodSlots is the fine-ring length of pod and container series, which the report reads over the aggregate
	// duration.
	PodSlots int
	// CoarseStep is the resolution of the coarse rings.
	CoarseStep time.Duration
	// CoarseSlots is the coarse-ring length; CoarseStep x CoarseSlots is the longest window a query can answer.
	CoarseSlots int
}

// DefaultConfig keeps 15 minutes of node series and 5 minutes of pod series at 1 s, and 1 hour of everything at
// 30 s: the default report reads 5 minutes of pods and 5/10/15 minutes of the node.
func DefaultConfig() Config {
	return Config{Step: time.Second, NodeSlots: 900, PodSlots: 300, CoarseStep: 30 * time.Second, CoarseSlots: 120}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Step <= 0 {
		errs = append(errs, fmt.Errorf("metric cache step must be positive, got %s", c.Step))
	}
	if c.CoarseStep < c.Step || (c.Step > 0 && c.CoarseStep%c.Step != 0) {
		errs = append(errs, fmt.Errorf("metric cache coarse step %s must be a multiple of the step %s", c.CoarseStep, c.Step))
	}
	for _, s := range []struct {
		name string
		n    int
	}{{"node slots", c.NodeSlots}, {"pod slots", c.PodSlots}, {"coarse slots", c.CoarseSlots}} {
		if s.n < 1 {
			errs = append(errs, fmt.Errorf("metric cache %s must be at least 1, got %d", s.name, s.n))
		}
	}
	return errors.Join(errs...)
}

// seriesOverhead estimates what a series costs besides its samples: the map entry, the key's string headers and
// the series struct with its two slice headers.
const seriesOverhead = 200

// SeriesBytes is the memory one series takes: 4 bytes per fine and coarse slot plus a fixed overhead. It does not
// depend on how many samples the series has received.
func (c Config) SeriesBytes(pod bool) int64 {
	fine := c.NodeSlots
	if pod {
		fine = c.PodSlots
	}
	return int64(4*(fine+c.CoarseSlots)) + seriesOverhead
}

// Retention is the longest time a series keeps a sample: the coarse span.
func (c Config) Retention() time.Duration { return time.Duration(c.CoarseSlots) * c.CoarseStep }

type series struct {
	fine, coarse ring
}

// MemoryCache is the in-memory Cache. It is a Runnable: Start runs its garbage collection.
type MemoryCache struct {
	cfg   Config
	clock clock.WithTicker

	mu     sync.RWMutex
	series map[Key]*series
	infos  map[string]any
	bytes  int64
}

var _ Cache = &MemoryCache{}

// New returns an empty cache; cfg must be valid.
func New(cfg Config, c clock.WithTicker) (*MemoryCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &MemoryCache{cfg: cfg, clock: c, series: map[Key]*series{}, infos: map[string]any{}}, nil
}

// Config is the cache's configuration.
func (m *MemoryCache) Config() Config { return m.cfg }

// Append implements Cache.
func (m *MemoryCache) Append(t time.Time, samples ...Sample) {
	fb, cb := bucket(t, m.cfg.Step), bucket(t, m.cfg.CoarseStep)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range samples {
		if s.Value != s.Value || s.Value > maxFloat32 || s.Value < -maxFloat32 { // NaN or beyond float32
			continue
		}
		se, ok := m.series[s.Key]
		if !ok {
			pod := s.Key.Pod != ""
			slots := m.cfg.NodeSlots
			if pod {
				slots = m.cfg.PodSlots
			}
			se = &series{fine: newRing(slots, false), coarse: newRing(m.cfg.CoarseSlots, true)}
			m.series[s.Key] = se
			m.bytes += m.cfg.SeriesBytes(pod)
		}
		se.fine.put(fb, s.Value)
		se.coarse.put(cb, s.Value)
	}
}

const maxFloat32 = 3.4e38

// Query implements Cache.
func (m *MemoryCache) Query(key Key, start, end time.Time) (Result, bool) {
	if !end.After(start) {
		return Result{}, false
	}
	m.mu.RLock()
	se, ok := m.series[key]
	if !ok {
		m.mu.RUnlock()
		return Result{}, false
	}
	r := &se.fine
	step := m.cfg.Step
	if end.Sub(start) > r.span(step) {
		r, step = &se.coarse, m.cfg.CoarseStep
	}
	// Buckets strictly after start's bucket up to end's: a window of w holds w/step buckets.
	first, last := bucket(start, step)+1, bucket(end, step)
	vals, fb, lb := r.collect(make([]float64, 0, min(last-first+1, int64(len(r.vals)))), first, last)
	m.mu.RUnlock()
	if len(vals) == 0 {
		return Result{}, false
	}
	res := Result{
		Count:      len(vals),
		First:      time.Unix(0, fb*int64(step)),
		Last:       time.Unix(0, lb*int64(step)),
		Coverage:   min(float64(last-fb+1)/float64(last-first+1), 1),
		Resolution: step,
		values:     vals,
		last:       vals[len(vals)-1],
	}
	for _, v := range vals {
		res.sum += v
	}
	return res, true
}

// Keys implements Cache.
func (m *MemoryCache) Keys(match func(Key) bool) []Key {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var keys []Key
	for k := range m.series {
		if match == nil || match(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Delete implements Cache.
func (m *MemoryCache) Delete(match func(Key) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.series {
		if match(k) {
			m.remove(k)
			n++
		}
	}
	return n
}

func (m *MemoryCache) remove(k Key) {
	delete(m.series, k)
	m.bytes -= m.cfg.SeriesBytes(k.Pod != "")
}

// SetInfo implements Cache.
func (m *MemoryCache) SetInfo(name string, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.infos[name] = v
}

// Info implements Cache.
func (m *MemoryCache) Info(name string) (any, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.infos[name]
	return v, ok
}

// Stats implements Cache.
func (m *MemoryCache) Stats() Stats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return Stats{Series: len(m.series), Bytes: m.bytes}
}

// Name is the cache's name as a Runnable.
func (m *MemoryCache) Name() string { return "metric-cache" }

// Start runs garbage collection every CoarseStep until ctx ends: series without a sample for the retention are
// removed. It always returns nil.
func (m *MemoryCache) Start(ctx context.Context) error {
	t := m.clock.NewTicker(m.cfg.CoarseStep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if n := m.GC(m.clock.Now()); n > 0 {
				klog.FromContext(ctx).V(4).Info("dropped idle series", "count", n)
			}
		}
	}
}

// GC removes the series whose newest sample is older than the retention at now, and returns how many.
func (m *MemoryCache) GC(now time.Time) int {
	oldest := bucket(now.Add(-m.cfg.Retention()), m.cfg.CoarseStep)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, s := range m.series {
		if !s.coarse.written || s.coarse.head < oldest {
			m.remove(k)
			n++
		}
	}
	return n
}
