package resctrl

import (
	"fmt"
	"math/bits"
	"strconv"
)

// Class is what one class of pods asks for, in percent: its range of the cache's ways and its share of memory
// bandwidth (NodeSLO resourceQOSStrategy.<class>.resctrlQOS).
type Class struct {
	// CATStartPercent and CATEndPercent bound the class's ways: [start, end) of the cache, in percent.
	CATStartPercent, CATEndPercent int64
	// MBAPercent is the class's memory bandwidth, in percent.
	MBAPercent int64
}

// CBM is the cache bit mask of [startPercent, endPercent) of c's ways: contiguous ways, from the way at
// startPercent (rounded down) to the one at endPercent (rounded up), so the class never gets less than it asked.
// It refuses percentages outside [0, 100], a start not below the end, and a range of fewer ways than min_cbm_bits:
// the hardware would refuse that mask, and a wider one than asked would take ways from the other classes.
func (c *Cache) CBM(startPercent, endPercent int64) (uint64, error) {
	switch {
	case startPercent < 0 || startPercent > 100 || endPercent < 0 || endPercent > 100:
		return 0, fmt.Errorf("the cache range %d%%-%d%% is outside [0, 100]", startPercent, endPercent)
	case startPercent >= endPercent:
		return 0, fmt.Errorf("the cache range %d%%-%d%% is empty: its start must be below its end", startPercent, endPercent)
	}
	ways := int64(c.Ways())
	first := ways * startPercent / 100
	last := (ways*endPercent + 99) / 100 // exclusive
	n := last - first
	if n < int64(c.MinBits) {
		return 0, fmt.Errorf("the cache range %d%%-%d%% is %d of the cache's %d ways; the hardware needs at least %d (min_cbm_bits)", startPercent, endPercent, n, ways, c.MinBits)
	}
	mask := (uint64(1)<<n - 1) << (first + int64(bits.TrailingZeros64(c.Mask)))
	return mask, c.Check(mask)
}

// Check returns an error when the hardware would refuse mask: empty, outside cbm_mask, with gaps where the
// hardware needs contiguous ways (no sparse_masks = 1), or with a first run of fewer than min_cbm_bits ways.
func (c *Cache) Check(mask uint64) error {
	switch {
	case mask == 0:
		return fmt.Errorf("cache mask 0 has no ways")
	case mask&^c.Mask != 0:
		return fmt.Errorf("cache mask %x has ways outside the cache's %x (cbm_mask)", mask, c.Mask)
	case !c.Sparse && !contiguous(mask):
		return fmt.Errorf("cache mask %x has gaps; this hardware needs contiguous ways", mask)
	}
	if run := bits.TrailingZeros64(^(mask >> bits.TrailingZeros64(mask))); run < c.MinBits {
		return fmt.Errorf("cache mask %x has a run of %d ways; the hardware needs at least %d (min_cbm_bits)", mask, run, c.MinBits)
	}
	return nil
}

// Percent is the memory bandwidth the hardware gives for percent: percent itself when it is one of the hardware's
// steps (min_bandwidth + N × bandwidth_gran), else the next step up, as the kernel itself rounds, so that the
// schemata written reads back the same. It refuses percentages outside [1, 100] and below min_bandwidth: the
// hardware cannot throttle that far, and a silently higher value would not be what was asked.
func (b *Bandwidth) Percent(percent int64) (int64, error) {
	switch {
	case percent < 1 || percent > 100:
		return 0, fmt.Errorf("memory bandwidth %d%% is outside [1, 100]", percent)
	case percent < b.Min:
		return 0, fmt.Errorf("memory bandwidth %d%% is below the hardware's minimum of %d%% (min_bandwidth)", percent, b.Min)
	}
	gran := max(b.Gran, 1)
	steps := (percent - b.Min + gran - 1) / gran
	return min(b.Min+steps*gran, 100), nil
}

// ClassSchemata is the schemata of a group for class: the L3 mask on every cache id (both CDP halves alike), and
// the bandwidth on every MB domain, for the resources info manages. It returns the same errors as CBM and Percent.
func (i *Info) ClassSchemata(class Class) (Schemata, error) {
	var s Schemata
	if i.L3 != nil {
		mask, err := i.L3.CBM(class.CATStartPercent, class.CATEndPercent)
		if err != nil {
			return nil, err
		}
		v := strconv.FormatUint(mask, 16)
		for _, r := range i.L3.Resources {
			s = append(s, Line{Resource: r, Domains: domains(i.L3.Domains, v)})
		}
	}
	if i.MB != nil {
		pct, err := i.MB.Percent(class.MBAPercent)
		if err != nil {
			return nil, err
		}
		s = append(s, Line{Resource: ResourceMB, Domains: domains(i.MB.Domains, strconv.FormatInt(pct, 10))})
	}
	return s, nil
}

func domains(ids []int, v string) []Domain {
	d := make([]Domain, len(ids))
	for n, id := range ids {
		d[n] = Domain{ID: id, Value: v}
	}
	return d
}

func popcount(m uint64) int { return bits.OnesCount64(m) }

// contiguous reports whether the set bits of m (not 0) are one run.
func contiguous(m uint64) bool {
	m >>= bits.TrailingZeros64(m)
	return m&(m+1) == 0
}
