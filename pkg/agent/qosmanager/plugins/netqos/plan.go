package netqos

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// major is the HTB tree's handle major number, "GL": the root qdisc with this handle is the plugin's, and only that
// one is ever replaced back or removed.
const major = 0x474c

// Minor numbers of the tree's classes. Each network class is an inner class with a shared leaf under it, so that a
// pod with a lower limit of its own still counts against its class's.
const (
	minorRoot     = 0x1
	minorPodFirst = 0x100 // pods' own leaves: 0x100, 0x101, ...
	minorPodLast  = 0xffff
)

// netClass is one of the three network classes.
type netClass int

const (
	classSystem netClass = iota // the default: the host's traffic and SYSTEM pods'
	classLS                     // LSE, LSR and LS pods
	classBE                     // best-effort pods
	numClasses
)

var classNames = [numClasses]string{"system", "LS", "BE"}

// fields are the NodeSLO paths of each class's configuration, for messages.
var fields = [numClasses]string{
	"resourceQOSStrategy.systemClass.networkQOS",
	"resourceQOSStrategy.lsClass.networkQOS",
	"resourceQOSStrategy.beClass.networkQOS",
}

// inner is the class's inner class; leaf is its shared leaf, where its pods' packets go.
func (c netClass) inner() uint16 { return uint16(0x2 + c) }
func (c netClass) leaf() uint16  { return uint16(0x20 + 0x10*c) }

// classOf is the network class of a pod: best-effort pods are BE whatever their QoS label (they are who the
// classes exist to hold back), SYSTEM pods system, every other pod LS (the mid tier included: it is not best-effort).
func classOf(pc slov1alpha1.PodClass) netClass {
	switch {
	case pc.BestEffort || pc.QoS == slov1alpha1.QoSBE:
		return classBE
	case pc.QoS == slov1alpha1.QoSSystem:
		return classSystem
	}
	return classLS
}

// htbClass is one class of the tree, rates in bits per second.
type htbClass struct {
	minor, parent uint16
	rate, ceil    uint64
}

// podRule sends the packets from ip to the leaf minor.
type podRule struct {
	ip    netip.Addr
	minor uint16
}

// plan is the tree and the rules the configuration asks for on the device.
type plan struct {
	total   uint64
	classes []htbClass // parents before their children
	rules   []podRule  // sorted by address
}

// classConfig is one class's egress settings, resolved against the total.
type classConfig struct {
	enabled       bool
	request, ceil uint64
}

// classConfigs resolves the three classes' settings against total, naming every value it cannot use.
func classConfigs(spec *slov1alpha1.NodeSLOSpec, total uint64) ([numClasses]classConfig, error) {
	var out [numClasses]classConfig
	var msgs []string
	s := spec.ResourceQOSStrategy
	if s == nil {
		return out, nil
	}
	if q := s.LSRClass; q != nil && q.NetworkQOS != nil && q.NetworkQOS.Enable != nil && *q.NetworkQOS.Enable {
		msgs = append(msgs, "resourceQOSStrategy.lsrClass.networkQOS: LSR pods share the LS class's bandwidth; set lsClass.networkQOS instead")
	}
	for c, q := range [numClasses]*slov1alpha1.ResourceQOS{s.SystemClass, s.LSClass, s.BEClass} {
		if q == nil || q.NetworkQOS == nil || q.NetworkQOS.Enable == nil || !*q.NetworkQOS.Enable {
			continue
		}
		n := q.NetworkQOS
		request, err := slov1alpha1.Bandwidth(n.EgressRequest, total, 0)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s.egressRequest: %v", fields[c], err))
		}
		ceil, err := slov1alpha1.Bandwidth(n.EgressLimit, total, total)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s.egressLimit: %v", fields[c], err))
		}
		for _, v := range []struct {
			name string
			val  *intstr.IntOrString
		}{{"ingressRequest", n.IngressRequest}, {"ingressLimit", n.IngressLimit}} {
			if _, err := slov1alpha1.Bandwidth(v.val, total, 0); err != nil {
				msgs = append(msgs, fmt.Sprintf("%s.%s: %v", fields[c], v.name, err))
			}
		}
		switch {
		case ceil > total:
			msgs = append(msgs, fmt.Sprintf("%s.egressLimit: %s is above the node's total %s", fields[c], bits(ceil), bits(total)))
		case ceil == 0:
			msgs = append(msgs, fmt.Sprintf("%s.egressLimit: 0 would stop the class's traffic; the least is 1 %% of the total", fields[c]))
		case request > ceil:
			msgs = append(msgs, fmt.Sprintf("%s.egressRequest: %s is above its egressLimit %s", fields[c], bits(request), bits(ceil)))
		}
		out[c] = classConfig{enabled: true, request: request, ceil: ceil}
	}
	if sum := out[classSystem].request + out[classLS].request + out[classBE].request; sum > total {
		msgs = append(msgs, fmt.Sprintf("the classes' egressRequests add up to %s, above the node's total %s", bits(sum), bits(total)))
	}
	if len(msgs) > 0 {
		return out, errors.New(strings.Join(msgs, "; "))
	}
	return out, nil
}

// enabled reports whether any class has network QoS on: the tree exists only then.
func enabled(spec *slov1alpha1.NodeSLOSpec) bool {
	s := spec.ResourceQOSStrategy
	if s == nil {
		return false
	}
	for _, q := range []*slov1alpha1.ResourceQOS{s.SystemClass, s.LSClass, s.BEClass, s.LSRClass} {
		if q != nil && q.NetworkQOS != nil && q.NetworkQOS.Enable != nil && *q.NetworkQOS.Enable {
			return true
		}
	}
	return false
}

// tree lays out the classes: the root at the total; each enabled class at its request (1 % of the total when it
// asks for none: HTB needs a rate, but never above the class's limit) and limit; the system class, the default, at
// what the others' requests leave and the total when it is not configured itself. LS and BE classes that are off do
// not exist: their pods' packets stay in the default class. A limit is never raised: HTB lets a class send at its
// rate whatever its ceiling says, so a rate above the limit would be the limit.
func tree(cfg [numClasses]classConfig, total uint64) []htbClass {
	floor := max(total/100, 8000)
	out := []htbClass{{minor: minorRoot, rate: total, ceil: total}}
	sys := cfg[classSystem]
	if !sys.enabled {
		left := total - min(total, cfg[classLS].request+cfg[classBE].request)
		sys = classConfig{enabled: true, request: left, ceil: total}
	}
	cfg[classSystem] = sys
	for c := range numClasses {
		if !cfg[c].enabled {
			continue
		}
		ceil := cfg[c].ceil
		rate := min(max(cfg[c].request, floor), ceil)
		out = append(out,
			htbClass{minor: c.inner(), parent: minorRoot, rate: rate, ceil: ceil},
			htbClass{minor: c.leaf(), parent: c.inner(), rate: rate, ceil: ceil})
	}
	return out
}

// minRate is the least rate a class gets, in bits per second: one byte a second, the unit HTB's rates are in.
const minRate = 8

// podLimits are the pods' own egress limits, by UID, in bits per second.
type podLimits map[types.UID]uint64

// buildPlan is the whole plan: the tree, a leaf per pod with a limit of its own (minors from alloc), and a rule per
// address of each pod whose class is on. Pods on the host's network have no address of their own and get no rule.
// A class's leaves share its rate (carveLeaves), so that its pods with limits of their own cannot, together, send
// past the class's limit.
func buildPlan(cfg [numClasses]classConfig, total uint64, pods []*statesinformer.PodMeta, own podLimits, alloc *minors) plan {
	p := plan{total: total, classes: tree(cfg, total)}
	for _, m := range pods {
		if m.Pod.Spec.HostNetwork {
			continue
		}
		c := classOf(m.PodClass)
		if c == classSystem || !cfg[c].enabled {
			continue
		}
		leaf := c.leaf()
		if limit, ok := own[m.Pod.UID]; ok {
			if minor, ok := alloc.get(m.Pod.UID); ok {
				p.classes = append(p.classes, htbClass{minor: minor, parent: c.inner(), ceil: min(limit, cfg[c].ceil)})
				leaf = minor
			}
		}
		for _, ip := range m.Pod.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				p.rules = append(p.rules, podRule{ip: a.Unmap(), minor: leaf})
			}
		}
	}
	carveLeaves(p.classes)
	slices.SortFunc(p.rules, func(a, b podRule) int { return a.ip.Compare(b.ip) })
	slices.SortStableFunc(p.classes[1:], func(a, b htbClass) int { return depth(a) - depth(b) })
	return p
}

// carveLeaves gives the leaves under each inner class rates that add up to the inner class's: each pod leaf an equal
// share (at most its own limit), the class's shared leaf the rest. HTB lets every class send at its rate without
// asking its parent, so leaves guaranteed more than their class together would send past the class's limit.
func carveLeaves(classes []htbClass) {
	inner := map[uint16]uint64{}
	leaves := map[uint16][]int{}
	for i, c := range classes {
		switch depth(c) {
		case 1:
			inner[c.minor] = c.rate
		case 2:
			leaves[c.parent] = append(leaves[c.parent], i)
		}
	}
	for parent, idx := range leaves {
		rate := inner[parent]
		share := max(rate/uint64(len(idx)), minRate)
		shared, given := -1, uint64(0)
		for _, i := range idx {
			if classes[i].minor < minorPodFirst {
				shared = i
				continue
			}
			classes[i].rate = min(share, classes[i].ceil)
			given += classes[i].rate
		}
		if shared >= 0 {
			classes[shared].rate = max(rate-min(given, rate), minRate)
		}
	}
}

// depth orders classes parents first: the root, then inner classes, then leaves.
func depth(c htbClass) int {
	switch {
	case c.minor == minorRoot:
		return 0
	case c.parent == minorRoot:
		return 1
	}
	return 2
}

// minors hands out the minor numbers of pods' own leaves and keeps each pod's while it needs one, so a pod's leaf
// does not move when others come and go.
type minors struct {
	byPod map[types.UID]uint16
	used  map[uint16]bool
}

func newMinors() *minors { return &minors{byPod: map[types.UID]uint16{}, used: map[uint16]bool{}} }

// get returns uid's minor, handing out the lowest free one; false when all are taken.
func (a *minors) get(uid types.UID) (uint16, bool) {
	if m, ok := a.byPod[uid]; ok {
		return m, true
	}
	for m := uint32(minorPodFirst); m <= minorPodLast; m++ {
		if !a.used[uint16(m)] {
			a.byPod[uid], a.used[uint16(m)] = uint16(m), true
			return uint16(m), true
		}
	}
	return 0, false
}

// keep frees the minors of the pods not in want.
func (a *minors) keep(want podLimits) {
	for uid, m := range a.byPod {
		if _, ok := want[uid]; !ok {
			delete(a.byPod, uid)
			delete(a.used, m)
		}
	}
}

// bits writes a bandwidth as the configuration does, a quantity of bits per second: "100Mbit/s".
func bits(v uint64) string {
	return resource.NewQuantity(int64(min(v, 1<<62)), resource.DecimalSI).String() + "bit/s"
}
