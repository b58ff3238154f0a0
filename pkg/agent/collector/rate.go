package collector

import "time"

// counter is a cumulative CPU-time reading.
type counter struct {
	usage time.Duration
	at    time.Time
}

// rates turns cumulative CPU-time readings into cores, per key. It keeps one reading per key; keys not read in a
// round are forgotten by retain.
type rates[K comparable] struct {
	prev map[K]counter
	seen map[K]bool
}

func newRates[K comparable]() *rates[K] {
	return &rates[K]{prev: map[K]counter{}, seen: map[K]bool{}}
}

// rate records usage at now and returns the cores used since the previous reading of k; ok is false on the first
// reading, when no time passed, or when the counter went back (the cgroup was recreated).
func (r *rates[K]) rate(k K, usage time.Duration, now time.Time) (cores float64, ok bool) {
	r.seen[k] = true
	p, had := r.prev[k]
	r.prev[k] = counter{usage: usage, at: now}
	if !had || !now.After(p.at) || usage < p.usage {
		return 0, false
	}
	return float64(usage-p.usage) / float64(now.Sub(p.at)), true
}

// retain forgets every key not read since the last retain, and returns them.
func (r *rates[K]) retain() []K {
	var gone []K
	for k := range r.prev {
		if !r.seen[k] {
			delete(r.prev, k)
			gone = append(gone, k)
		}
	}
	clear(r.seen)
	return gone
}
