package topologyreporter

import (
	"errors"
	"fmt"
	"math/bits"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
)

// ErrNoNUMA is returned for a host whose kernel reports no NUMA nodes (no devices/system/node/nodeN with memory):
// there are no zones to publish.
var ErrNoNUMA = errors.New("the kernel reports no NUMA node memory under devices/system/node")

// Zones computes the Node zones of the node's NodeResourceTopology from the host's topology t, the Node's capacity
// and allocatable, and the requests of its pods (see the package documentation for the rule), by NUMA node ID.
func Zones(t *topology.Topology, capacity, allocatable, requests corev1.ResourceList) ([]nrt.Zone, error) {
	var mem uint64
	cpus := 0
	for _, n := range t.Nodes {
		mem += n.MemTotal
		cpus += n.CPUs.Size()
	}
	if mem == 0 {
		return nil, ErrNoNUMA
	}
	if cpus == 0 {
		return nil, errors.New("no NUMA node has an online CPU")
	}
	type share struct{ capacity, allocatable, requests int64 }
	shares := map[corev1.ResourceName]share{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		c, a, q := amount(capacity, r), amount(allocatable, r), amount(requests, r)
		if c <= 0 {
			return nil, fmt.Errorf("the Node's status.capacity has no %s", r)
		}
		// Allocatable never above capacity, requests never above allocatable: an inconsistent status gives full
		// zones rather than zones with more than they hold.
		a = min(max(a, 0), c)
		shares[r] = share{capacity: c, allocatable: a, requests: min(max(q, 0), a)}
	}
	zones := make([]nrt.Zone, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		z := nrt.Zone{Name: nrt.ZoneName(n.ID), Type: nrt.ZoneTypeNode}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			zc := int64(n.CPUs.Size()) * 1000
			if r == corev1.ResourceMemory {
				zc = int64(n.MemTotal)
			}
			s := shares[r]
			za := mulDiv(zc, s.allocatable, s.capacity)
			avail := max(za-mulDiv(zc, s.requests, s.capacity), 0)
			z.Resources = append(z.Resources, nrt.ResourceInfo{
				Name: string(r), Capacity: slov1alpha1.QuantityOf(zc, r), Allocatable: slov1alpha1.QuantityOf(za, r), Available: slov1alpha1.QuantityOf(avail, r),
			})
		}
		zones = append(zones, z)
	}
	return zones, nil
}

// amount is r in l in millicores for CPU, bytes for memory (slov1alpha1.AmountOf), 0 when l has no r.
func amount(l corev1.ResourceList, r corev1.ResourceName) int64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	return slov1alpha1.AmountOf(q, r)
}

// mulDiv is floor(a x b / c) for non-negative a, c > 0 and 0 <= b <= c, exact where a x b overflows int64 (4 PiB
// of memory times 4 PiB).
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c)) // b <= c, so the quotient is at most a and fits
	return int64(q)
}
