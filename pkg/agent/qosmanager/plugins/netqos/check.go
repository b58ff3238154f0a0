package netqos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The classify check asks, from counters the kernel keeps anyway, whether the packets of the pods the plugin
// classifies reach their classes. A pod's class is chosen in netfilter's postrouting hook; a CNI whose datapath
// moves pods' packets past netfilter (an eBPF datapath such as Cilium's or Calico's eBPF mode, Open vSwitch), or
// a program that sets their priority again before the device's queue, leaves them all in the system class while
// every write succeeds. The check compares, over a window:
//
//   - seen: the pods' packets the table's witness rules counted in prerouting, forwarded or for the node itself;
//   - classified: those its classifying rules gave a class on their way out through an egress device;
//   - inClasses: the packets the LS and BE classes of the tree sent;
//   - podDevices: the packets the pods' own host-side devices took from them, where a routed CNI gives each pod a
//     device of its own (Calico, Cilium with per-endpoint routes, any point-to-point plugin; a bridge is shared).
//
// A window in which the pods' devices took packets and netfilter saw none says netfilter is bypassed; one in which
// packets were classified and none arrived in the classes says their class was lost on the way. Either is the
// plugin's verdict (the NetworkQOS condition False, a Warning event on the NodeSLO) until a window shows pods'
// packets in netfilter (a bypass) or in their classes (a lost class). A window too quiet to tell (fewer than
// checkPackets packets) leaves the verdict as it was, and so does a window with the same finding: the condition's
// message and the event are the first window's, not renewed every window with its counts.
const (
	checkEvery   = 5 * time.Second  // how often the counters are sampled
	checkWindow  = 30 * time.Second // how long a window sums before it is judged
	checkPackets = 200              // the fewest packets in a window that count as evidence
)

// ReasonCannotClassify is the reason of the Warning event recorded on the NodeSLO when the check finds that pods'
// packets do not reach their classes.
const ReasonCannotClassify = "NetworkQOSCannotClassify"

// tunnelKinds are the kinds of device a pod's packet may leave the node's IP stack through before it is wrapped in
// one from the node's own address: the classifying rules match them besides the shaped device, and the packet keeps
// the priority its inner packet was given (proven for VXLAN by TestRealKernelOverlayTrafficIsShaped).
var tunnelKinds = map[string]bool{"vxlan": true, "geneve": true, "ipip": true, "ip6tnl": true, "sit": true,
	"gre": true, "gretap": true, "ip6gre": true, "ip6gretap": true, "wireguard": true}

// window is what the counters moved by since a window began.
type window struct {
	seen, classified, inClasses, podDevices uint64
	devices                                 map[string]bool // the pods' own devices that took packets
}

// classifyCheck keeps the last sample of each counter and the window being summed.
type classifyCheck struct {
	sampled, started time.Time // the last sample; the window's start (zero: none yet)
	rules            map[string]uint64
	classes          uint64
	podDevs          map[int]uint64 // by interface index
	sum              window
	rewritten        bool    // the table was written again since the last sample
	verdict          verdict // why the pods' packets do not reach their classes; none when they do or it is not known
}

// verdictKind is what a window says of the pods' packets.
type verdictKind int

const (
	classifies verdictKind = iota // they reach their classes, or nothing says otherwise yet
	bypassed                      // netfilter does not see them
	classLost                     // classified, and their class lost before the device's queue
)

// verdict is the check's finding: its kind, and the message of the window that found it (kept while the kind
// holds, so that the NodeSLO's condition and the event do not change with each window's counts).
type verdict struct {
	kind    verdictKind
	message string
}

// reset forgets everything: network QoS was turned off, or moved to another device.
func (c *classifyCheck) reset() { *c = classifyCheck{} }

// delta is how far a counter moved from prev to cur; a counter that went back (its rule or class was made again)
// counts from zero.
func delta(prev uint64, known bool, cur uint64) uint64 {
	switch {
	case !known:
		return 0
	case cur < prev:
		return cur
	}
	return cur - prev
}

// check samples the counters when checkEvery has passed, and judges the window when checkWindow has: link is the
// shaped device, devices the egress devices, pl the plan just applied.
func (p *Plugin) check(ctx context.Context, link netlink.Link, devices []string, pl plan) {
	now := p.d.Clock.Now()
	c := &p.checked
	if !c.sampled.IsZero() && now.Sub(c.sampled) < checkEvery {
		return
	}
	log := klog.FromContext(ctx)
	rules, err := p.rules.counts()
	if err != nil {
		log.V(1).Info("the network QoS classify check cannot read the table's counters", "err", err.Error())
		return
	}
	stats, err := p.shaper.stats(link)
	if err != nil {
		log.V(1).Info("the network QoS classify check cannot read the classes' counters", "err", err.Error())
		return
	}
	classes := stats[classLS].packets + stats[classBE].packets
	podDevs, names := p.podDevices(pl, devices)

	first := c.sampled.IsZero()
	if c.sum.devices == nil {
		c.sum.devices = map[string]bool{}
	}
	for key, cur := range rules {
		prev, known := c.rules[key] // none at the first sample: every counter's first sample is its baseline
		if c.rewritten && !first {
			// The table was written since the last sample: its counters count from the write, whatever the last
			// sample read (a delta from it would lose the packets since).
			prev, known = 0, true
		}
		switch {
		case strings.HasPrefix(key, ruleSeen+" "):
			c.sum.seen += delta(prev, known, cur)
		case strings.HasPrefix(key, ruleClassify+" "):
			c.sum.classified += delta(prev, known, cur)
		}
	}
	c.sum.inClasses += delta(c.classes, !first, classes)
	for idx, cur := range podDevs {
		prev, known := c.podDevs[idx]
		if d := delta(prev, known, cur); d > 0 {
			c.sum.podDevices += d
			c.sum.devices[names[idx]] = true
		}
	}
	c.sampled, c.rules, c.classes, c.podDevs, c.rewritten = now, rules, classes, podDevs, false
	if first {
		c.started = now
	}
	if now.Sub(c.started) < checkWindow {
		return
	}
	v, known := judge(c.sum, now.Sub(c.started), link.Attrs().Name, devices, c.verdict.kind)
	c.started, c.sum = now, window{}
	if !known || v.kind == c.verdict.kind {
		return
	}
	c.verdict = v
	if v.kind == classifies {
		log.Info("network QoS classifies pods' packets on this node again", "device", link.Attrs().Name)
		return
	}
	log.Info(v.message)
	if slo := p.d.States.GetNodeSLO(); slo != nil && p.d.Events != nil {
		p.d.Events.Eventf(slo, corev1.EventTypeWarning, ReasonCannotClassify, "%s", v.message)
	}
}

// judge reads a window of length d, given the verdict in force: the window's verdict and whether it says
// anything. Each finding is undone only by its own counter-evidence: a bypass by pods' packets seen in netfilter, a
// lost class by packets in the classes (pods' packets seen in netfilter say nothing of their class).
func judge(w window, d time.Duration, device string, devices []string, current verdictKind) (verdict, bool) {
	const prefix = "network QoS cannot classify on this node: "
	switch {
	case w.podDevices >= checkPackets && w.seen == 0:
		return verdict{bypassed, fmt.Sprintf(prefix+"the pods' own devices (%s) took %d packets from pods in the shaped classes in the last %s and none reached netfilter (its prerouting hook; their class is chosen in postrouting): the CNI's datapath moves pods' packets past netfilter (an eBPF datapath such as Cilium's or Calico's eBPF mode, or Open vSwitch), and %s shapes them as the system class",
			strings.Join(sortedKeys(w.devices), ", "), w.podDevices, d.Round(time.Second), device)}, true
	case w.classified >= checkPackets && w.inClasses == 0:
		return verdict{classLost, fmt.Sprintf(prefix+"%d packets of pods in the shaped classes were given their class on their way out through %s in the last %s and none arrived in those classes on %s: something between netfilter and the device's queue sets their priority again (a tc or eBPF program on the device, a tunnel that does not keep it), and %s shapes them as the system class",
			w.classified, strings.Join(devices, ", "), d.Round(time.Second), device, device)}, true
	case current == bypassed && w.seen > 0, current == classLost && w.inClasses > 0,
		current == classifies && (w.seen >= checkPackets || w.inClasses > 0):
		return verdict{}, true
	}
	return verdict{}, false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// podDevices are the received-packet counters of the host-side devices that route to exactly one pod of the node,
// one of those the plan classifies, by interface index, with their names: the packets those pods sent into the
// node. A bridge, an egress device, or a device routing to several pods (a CNI's gateway device) tells nothing of
// one pod and is left out.
func (p *Plugin) podDevices(pl plan, egress []string) (map[int]uint64, map[int]string) {
	classified := map[string]bool{}
	for _, r := range pl.rules {
		classified[r.ip.String()] = true
	}
	podsOn := map[int]map[types.UID]bool{} // interface index -> pods routed there (a dual-stack pod's two addresses: one pod)
	mine := map[int]bool{}                 // interface index -> routes to a classified pod
	for _, m := range p.d.States.GetAllPods() {
		if m.Pod.Spec.HostNetwork {
			continue
		}
		for _, ip := range m.Pod.Status.PodIPs {
			routes, err := p.shaper.nl.RouteGet(net.ParseIP(ip.IP))
			if err != nil || len(routes) == 0 {
				continue
			}
			idx := routes[0].LinkIndex
			if podsOn[idx] == nil {
				podsOn[idx] = map[types.UID]bool{}
			}
			podsOn[idx][m.Pod.UID] = true
			if classified[ip.IP] {
				mine[idx] = true
			}
		}
	}
	counts, names := map[int]uint64{}, map[int]string{}
	for idx := range mine {
		if len(podsOn[idx]) != 1 {
			continue
		}
		link, err := p.shaper.nl.LinkByIndex(idx)
		if err != nil || link.Type() == "bridge" || slices.Contains(egress, link.Attrs().Name) || link.Attrs().Statistics == nil {
			continue
		}
		counts[idx], names[idx] = link.Attrs().Statistics.RxPackets, link.Attrs().Name
	}
	return counts, names
}

// egressDevices are the devices pods' packets leave the node's IP stack by toward the shaped device: the device
// itself and the node's tunnel devices (tunnelKinds), sorted after it by name. They are listed again every
// checkEvery.
func (p *Plugin) egressDevices(link netlink.Link) ([]string, error) {
	name := link.Attrs().Name
	now := p.d.Clock.Now()
	if len(p.egress) > 0 && p.egress[0] == name && now.Sub(p.egressAt) < checkEvery {
		return p.egress, nil
	}
	links, err := p.shaper.nl.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing the node's devices for its tunnels: %w", err)
	}
	var tunnels []string
	for _, l := range links {
		if tunnelKinds[l.Type()] && l.Attrs().Name != name {
			tunnels = append(tunnels, l.Attrs().Name)
		}
	}
	slices.Sort(tunnels)
	p.egress, p.egressAt = append([]string{name}, tunnels...), now
	return p.egress, nil
}

// Unsupported implements qosmanager.SteppingAside: the classify check's verdict.
func (p *Plugin) Unsupported() string { return p.checked.verdict.message }
