package collector

import "time"

// countAt is a cumulative count and when it was read.
type countAt struct {
	n  uint64
	at time.Time
}

// counters turns cumulative counts (bytes, operations, cycles) into rates per second, per key. Keys not read in a
// round are forgotten by retain.
type counters[K comparable] struct {
	prev map[K]countAt
	seen map[K]bool
}

func newCounters[K comparable]() *counters[K] {
	return &counters[K]{prev: map[K]countAt{}, seen: map[K]bool{}}
}

// rate records n at now and returns the count per second since k's previous reading; ok is false on the first
// reading, when no time passed, or when the count went back (the cgroup was recreated).
func (c *counters[K]) rate(k K, n uint64, now time.Time) (perSecond float64, ok bool) {
	grown, elapsed, ok := c.delta(k, n, now)
	if !ok {
		return 0, false
	}
	return float64(grown) / elapsed.Seconds(), true
}

// delta records n at now and returns how much the count grew since k's previous reading and the time between
// them; ok as for rate.
func (c *counters[K]) delta(k K, n uint64, now time.Time) (grown uint64, elapsed time.Duration, ok bool) {
	c.seen[k] = true
	p, had := c.prev[k]
	c.prev[k] = countAt{n: n, at: now}
	if !had || !now.After(p.at) || n < p.n {
		return 0, 0, false
	}
	return n - p.n, now.Sub(p.at), true
}

// retain forgets every key not read since the last retain.
func (c *counters[K]) retain() {
	for k := range c.prev {
		if !c.seen[k] {
			delete(c.prev, k)
		}
	}
	clear(c.seen)
}
