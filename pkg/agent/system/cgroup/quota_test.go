package cgroup

import (
	"testing"
	"time"
)

func us(quota, period int64) CPUQuota {
	return CPUQuota{Quota: time.Duration(quota) * time.Microsecond, Period: time.Duration(period) * time.Microsecond}
}

// The kernel's comparison, written out for the tests: (quota << 20) / period in whole microseconds (big enough here
// not to overflow).
func kernelRefuses(child, parent CPUQuota) bool {
	if parent.Unlimited() {
		return false
	}
	if child.Unlimited() {
		return true
	}
	r := func(q CPUQuota) int64 { return q.Quota.Microseconds() << 20 / q.Period.Microseconds() }
	return r(child) > r(parent)
}

// The edges of fitting a container's quota under an ancestor's: limits that are not whole millicores, periods
// other than 100 ms, the kernel's 1 ms minimum, rounding, and quotas large enough to overflow a naive product.
func TestQuotaWithin(t *testing.T) {
	unlimited := CPUQuota{Quota: -1, Period: CFSPeriod}
	tests := []struct {
		name          string
		q, limit      CPUQuota
		want          CPUQuota
		exceeds       bool
		kernelRefuses bool // the kernel would refuse q below limit (checked against kernelRefuses)
	}{
		{name: "below", q: us(20000, 100000), limit: us(20001, 100000), want: us(20000, 100000)},
		{name: "equal", q: us(20001, 100000), limit: us(20001, 100000), want: us(20001, 100000)},
		{name: "a microsecond above a limit of 200.01 millicores", q: us(20002, 100000), limit: us(20001, 100000), want: us(20001, 100000), exceeds: true, kernelRefuses: true},
		{name: "2 cores under 200.01 millicores", q: us(200000, 100000), limit: us(20001, 100000), want: us(20001, 100000), exceeds: true, kernelRefuses: true},
		{name: "200.02 millicores over a 50 ms period", q: us(10001, 50000), limit: us(20001, 100000), want: us(20001, 100000), exceeds: true, kernelRefuses: true},
		{name: "half the limit's 200.01 millicores over 50 ms rounds to a microsecond below", q: us(10000, 50000), limit: us(20001, 100000), want: us(10000, 50000)},
		{name: "the kernel's minimum over 100 ms under a 50 ms period: 1 ms per 50 ms is twice as much", q: us(1000, 50000), limit: us(1000, 100000), want: us(1000, 100000), exceeds: true, kernelRefuses: true},
		{name: "a period of 333.333 ms against 100 ms", q: us(111111, 333333), limit: us(33333, 100000), want: us(33333, 100000), exceeds: true, kernelRefuses: true},
		{name: "1 s period, 64 cores, under 1.5 cores", q: us(64_000_000, 1_000_000), limit: us(150000, 100000), want: us(150000, 100000), exceeds: true, kernelRefuses: true},
		{name: "unlimited under a limit", q: unlimited, limit: us(50000, 100000), want: us(50000, 100000), exceeds: true, kernelRefuses: true},
		{name: "anything under no limit", q: us(400000, 100000), limit: unlimited, want: us(400000, 100000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Exceeds(tt.limit); got != tt.exceeds {
				t.Errorf("Exceeds = %v, want %v", got, tt.exceeds)
			}
			if got := kernelRefuses(tt.q, tt.limit); got != tt.kernelRefuses {
				t.Errorf("the kernel's rule says refused = %v; the case says %v", got, tt.kernelRefuses)
			}
			got := tt.q.Within(tt.limit)
			if got != tt.want {
				t.Errorf("Within = %v/%v, want %v/%v", got.Quota, got.Period, tt.want.Quota, tt.want.Period)
			}
			if kernelRefuses(got, tt.limit) {
				t.Errorf("the kernel would refuse %v/%v below %v/%v", got.Quota, got.Period, tt.limit.Quota, tt.limit.Period)
			}
		})
	}
}

// Every quota of 1..3000 µs over periods of 1..3 ms (and 100 ms) against limits the same way: what Within gives is
// never refused by the kernel's rule, and it changes q only when the kernel would refuse q.
func TestQuotaWithinNeverRefused(t *testing.T) {
	periods := []int64{1000, 1500, 2000, 3000, 100000}
	for _, pp := range periods {
		for pq := int64(1000); pq <= 3000; pq += 7 {
			limit := us(pq, pp)
			for _, cp := range periods {
				for cq := int64(1000); cq <= 3000; cq += 11 {
					q := us(cq, cp)
					got := q.Within(limit)
					if kernelRefuses(got, limit) {
						t.Fatalf("%v/%v within %v/%v gave %v/%v, which the kernel refuses", q.Quota, q.Period, limit.Quota, limit.Period, got.Quota, got.Period)
					}
					if (got != q) != kernelRefuses(q, limit) {
						t.Fatalf("%v/%v within %v/%v gave %v/%v; the kernel refuses the original: %v", q.Quota, q.Period, limit.Quota, limit.Period, got.Quota, got.Period, kernelRefuses(q, limit))
					}
				}
			}
		}
	}
}
