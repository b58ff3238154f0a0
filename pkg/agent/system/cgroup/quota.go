package cgroup

import (
	"math/bits"
	"time"
)

// The cgroup v1 kernel refuses a CFS quota that allows more CPU per period than an ancestor's (kernel/sched/core.c,
// tg_cfs_schedulable_down: "quota > parent_quota" is -EINVAL; an unlimited cgroup inherits its parent's). It
// compares quotas as fixed-point ratios of whole microseconds, to_ratio(period, quota) = (quota << 20) / period, so
// two quotas of the same number of cores over different periods can differ by the rounding, and the same ratio is
// the only value certain to be accepted. cgroup v2 takes the smaller of the two instead of refusing.

// bwShift is the kernel's BW_SHIFT: the fixed-point fraction bits of a bandwidth ratio.
const bwShift = 20

// ratio is the kernel's bandwidth ratio of q; q must be limited.
func (q CPUQuota) ratio() uint64 {
	quota, period := uint64(q.Quota/time.Microsecond), uint64(q.Period/time.Microsecond)
	if period == 0 {
		period = 1 // below a microsecond the kernel refuses the period itself; compare as the smallest
	}
	hi, lo := bits.Mul64(quota, 1<<bwShift)
	if hi >= period {
		return ^uint64(0) // beyond any quota the kernel accepts
	}
	r, _ := bits.Div64(hi, lo, period)
	return r
}

// Exceeds reports whether q allows more CPU per period than limit, compared as the cgroup v1 kernel compares a
// child's quota with an ancestor's: a q that exceeds an ancestor's quota is refused there. An unlimited q exceeds
// every limited one; nothing exceeds an unlimited limit.
func (q CPUQuota) Exceeds(limit CPUQuota) bool {
	switch {
	case limit.Unlimited():
		return false
	case q.Unlimited():
		return true
	}
	return q.ratio() > limit.ratio()
}

// Within is q where it does not exceed limit, and limit itself (its quota and its period) where it does: the same
// ratio as the ancestor's is accepted whatever the periods and the rounding, where a quota converted to q's period
// could round above it or fall below the kernel's 1 ms minimum.
func (q CPUQuota) Within(limit CPUQuota) CPUQuota {
	if q.Exceeds(limit) {
		return limit
	}
	return q
}
