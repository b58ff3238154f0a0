package evictor

import (
	"math"
	"time"
)

// bucket is a token bucket on explicit times: it holds at most burst tokens and gains perSecond tokens a second.
// golang.org/x/time/rate works on explicit times too, but gives a token back only before the reservation's time has
// passed, and a refused eviction gives its token back after the API server answered.
type bucket struct {
	tokens, burst, perSecond float64
	last                     time.Time
}

// newBucket returns a full bucket.
func newBucket(perSecond float64, burst int, now time.Time) *bucket {
	return &bucket{tokens: float64(burst), burst: float64(burst), perSecond: perSecond, last: now}
}

// take removes a token if there is one.
func (b *bucket) take(now time.Time) bool {
	b.fill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// giveBack returns a token taken for something that did not happen.
func (b *bucket) giveBack(now time.Time) {
	b.fill(now)
	b.tokens = math.Min(b.burst, b.tokens+1)
}

// next is how long until the next token.
func (b *bucket) next(now time.Time) time.Duration {
	b.fill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / b.perSecond * float64(time.Second))
}

func (b *bucket) fill(now time.Time) {
	if !now.After(b.last) {
		return // a clock that went back adds nothing
	}
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSecond)
	b.last = now
}
