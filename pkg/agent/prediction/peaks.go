package prediction

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The hourly peaks' windows (docs/prediction.md, "The predicted peak"):
const (
	// dayHours is how many whole hours before the current one the recent-day peak covers: with the current hour,
	// 25 hours, so that yesterday's hour that is about to come round again is still in it.
	dayHours = 24
	// weekHours is a week: the weekly look-ahead reads the hours a week before now.
	weekHours = 7 * 24
	// weekAheadHours is how far past "a week ago" the weekly look-ahead reads: the hour a week ago and the two after
	// it, so that a peak that comes back on the same weekday (a Monday morning after a quiet weekend) is predicted
	// before it starts, and one that comes an hour later or earlier than last week too.
	weekAheadHours = 2
	// peakHours is how many hours the ring keeps: back to the start of the weekly look-ahead.
	peakHours = weekHours + 1
)

// hourlyPeaks is the largest sample of each of the last peakHours hours (Unix hours: the hour that holds a time),
// kept exactly rather than in buckets, so that a predicted peak is never below a sample that counted.
type hourlyPeaks struct {
	// vals[h % peakHours] is hour h's peak, for last-peakHours < h <= last.
	vals [peakHours]float64
	// first is the first hour recorded, last the newest; both meaningless while set is false.
	first, last int64
	set         bool
}

// hourOf is the Unix hour that holds t.
func hourOf(t time.Time) int64 {
	s := t.Unix()
	h := s / 3600
	if s%3600 < 0 {
		h--
	}
	return h
}

func slot(h int64) int {
	i := int(h % peakHours)
	if i < 0 {
		i += peakHours
	}
	return i
}

// record counts v as a sample of the hour that holds at. A NaN or infinite v is ignored, a negative one counts as
// 0, one older than the ring is dropped. A newer hour clears the slots of the hours between.
func (p *hourlyPeaks) record(at time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	v = max(v, 0)
	h := hourOf(at)
	switch {
	case !p.set:
		p.vals = [peakHours]float64{}
		p.first, p.last, p.set = h, h, true
	case h > p.last:
		for k := p.last + 1; k <= h && k <= p.last+peakHours; k++ {
			p.vals[slot(k)] = 0
		}
		p.last = h
	case h <= p.last-peakHours:
		return
	}
	p.first = min(p.first, h)
	p.vals[slot(h)] = max(p.vals[slot(h)], v)
}

// peak is the largest peak of the hours from..to (inclusive) that the ring holds; 0 if it holds none of them.
func (p *hourlyPeaks) peak(from, to int64) float64 {
	if !p.set {
		return 0
	}
	from = max(from, p.first, p.last-peakHours+1)
	to = min(to, p.last)
	var out float64
	for h := from; h <= to; h++ {
		out = max(out, p.vals[slot(h)])
	}
	return out
}

// forecast is the predicted peak at now: the larger of the recent-day peak (the current hour and the dayHours
// before it) and the weekly look-ahead (the hour a week ago and the weekAheadHours after it).
func (p *hourlyPeaks) forecast(now time.Time) float64 {
	h := hourOf(now)
	return max(p.peak(h-dayHours, h), p.peak(h-weekHours, h-weekHours+weekAheadHours))
}

// coversDay says the ring has peaks of a whole day before now's hour: until then (a model read from a checkpoint
// of the format before the hourly peaks) the histograms' percentiles stand in for the history it lacks.
func (p *hourlyPeaks) coversDay(now time.Time) bool {
	return p.set && hourOf(now)-p.first >= dayHours
}

// appendBinary appends the ring: a flag byte (1: set), then if set first and last (int64), the number of hours
// that follow (uvarint, at most peakHours) and their peaks, oldest first (float64 bits).
func (p *hourlyPeaks) appendBinary(b []byte) []byte {
	if !p.set {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.first))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.last))
	from := max(p.first, p.last-peakHours+1)
	b = binary.AppendUvarint(b, uint64(p.last-from+1))
	for h := from; h <= p.last; h++ {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.vals[slot(h)]))
	}
	return b
}

// binarySize is the length of appendBinary's output.
func (p *hourlyPeaks) binarySize() int {
	if !p.set {
		return 1
	}
	n := p.last - max(p.first, p.last-peakHours+1) + 1
	return 1 + 16 + len(binary.AppendUvarint(nil, uint64(n))) + 8*int(n)
}

// maxHour bounds the hours a checkpoint may name: about 125 million years either side of 1970.
const maxHour = 1 << 40

// readBinary reads what appendBinary wrote from the start of b and returns the rest.
func (p *hourlyPeaks) readBinary(b []byte) ([]byte, error) {
	*p = hourlyPeaks{}
	if len(b) < 1 {
		return nil, fmt.Errorf("%w: hourly peaks missing", errModelFormat)
	}
	switch b[0] {
	case 0:
		return b[1:], nil
	case 1:
	default:
		return nil, fmt.Errorf("%w: hourly peaks flag %d", errModelFormat, b[0])
	}
	b = b[1:]
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: hourly peaks truncated", errModelFormat)
	}
	p.first = int64(binary.LittleEndian.Uint64(b))
	p.last = int64(binary.LittleEndian.Uint64(b[8:]))
	n, k := binary.Uvarint(b[16:])
	// The hours must be ones a clock gives (no arithmetic on them overflows) and n the count appendBinary writes for
	// them, so that what is read encodes back to the same bytes.
	if k <= 0 || p.first > p.last || p.first < -maxHour || p.last > maxHour || n != uint64(min(p.last-p.first+1, peakHours)) {
		return nil, fmt.Errorf("%w: hourly peaks of %d hours from hour %d to %d", errModelFormat, n, p.first, p.last)
	}
	b = b[16+k:]
	if uint64(len(b)) < 8*n {
		return nil, fmt.Errorf("%w: hourly peaks truncated", errModelFormat)
	}
	for i := range int64(n) {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: hourly peak %v", errModelFormat, v)
		}
		p.vals[slot(p.last-int64(n)+1+i)] = v
	}
	p.set = true
	return b[8*n:], nil
}
