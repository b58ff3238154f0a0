package collector

import (
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// Round is one collection round: the collectors due at one moment, run one after another in registry order. They
// share the round's time and its list of pods, so what one collector derives from another's samples (system usage
// = node - pods - host applications) compares measurements of the same moment, never a node sample with pod
// samples a round older.
//
// A Round belongs to the Runner's one goroutine; collectors must not keep it after Collect returns.
type Round struct {
	// Time stamps every sample of the round. Rates are computed over the time between rounds.
	Time time.Time

	states statesinformer.States
	cache  metriccache.Cache
	pods   []*statesinformer.PodMeta
	listed bool
	values map[metriccache.Key]float64
}

func newRound(states statesinformer.States, cache metriccache.Cache) *Round {
	return &Round{states: states, cache: cache, values: map[metriccache.Key]float64{}}
}

// reset prepares r for the round at t, keeping its map's memory.
func (r *Round) reset(t time.Time) {
	r.Time, r.pods, r.listed = t, nil, false
	clear(r.values)
}

// Pods is the node's pods as the states informer listed them when the round first asked; every collector of the
// round sees the same list. Nil states (a collector test without pods) is no pods.
func (r *Round) Pods() []*statesinformer.PodMeta {
	if !r.listed && r.states != nil {
		r.pods, r.listed = r.states.GetAllPods(), true
	}
	return r.pods
}

// Append stores samples in the cache at the round's time and remembers them for Value.
func (r *Round) Append(samples ...metriccache.Sample) {
	r.cache.Append(r.Time, samples...)
	for _, s := range samples {
		r.values[s.Key] = s.Value
	}
}

// Value is the sample of key that a collector appended earlier in this round.
func (r *Round) Value(key metriccache.Key) (float64, bool) {
	v, ok := r.values[key]
	return v, ok
}
