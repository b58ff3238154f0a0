package netqos

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// shaper keeps the HTB tree on one device through netlink, in the network namespace its handle speaks to.
type shaper struct {
	nl *netlink.Handle
}

// rootQdisc is the device's root qdisc, nil when it has the kernel's default.
func (s shaper) rootQdisc(link netlink.Link) (netlink.Qdisc, error) {
	qs, err := s.nl.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("listing the qdiscs of %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

func ours(q netlink.Qdisc) bool {
	h, ok := q.(*netlink.Htb)
	return ok && h.Handle == netlink.MakeHandle(major, 0)
}

// apply makes the device's tree the plan's: the root qdisc becomes the plugin's HTB if it is not (whatever was
// there is replaced, as the kernel's default would be), classes are added or changed parents first, and classes the
// plan does not have are removed, leaves first. A tree that already matches is left untouched: nothing is written.
// changed lists what was written.
func (s shaper) apply(link netlink.Link, p plan, fqCodel bool) (changed []string, err error) {
	name := link.Attrs().Name
	qh := netlink.MakeHandle(major, 0)
	root, err := s.rootQdisc(link)
	if err != nil {
		return nil, err
	}
	if root == nil || !ours(root) || root.(*netlink.Htb).Defcls != uint32(classSystem.leaf()) {
		q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: qh, Parent: netlink.HANDLE_ROOT})
		q.Defcls = uint32(classSystem.leaf())
		if err := s.nl.QdiscReplace(q); err != nil {
			return nil, fmt.Errorf("setting the root qdisc of %s to htb %s: %w", name, netlink.HandleStr(qh), err)
		}
		changed = append(changed, "qdisc "+netlink.HandleStr(qh))
	}
	list, err := s.nl.ClassList(link, qh)
	if err != nil {
		return changed, fmt.Errorf("listing the classes of %s: %w", name, err)
	}
	have := map[uint32]*netlink.HtbClass{}
	for _, c := range list {
		if h, ok := c.(*netlink.HtbClass); ok {
			have[h.Handle] = h
		}
	}
	want := map[uint32]bool{}
	for _, c := range p.classes {
		want[netlink.MakeHandle(major, c.minor)] = true
		what, err := s.ensureClass(link, c, have)
		if what != "" {
			changed = append(changed, what)
		}
		if err != nil {
			return changed, err
		}
	}
	gone, err := s.removeClasses(link, have, want)
	changed = append(changed, gone...)
	if err != nil || !fqCodel {
		return changed, err
	}
	queued, err := s.ensureLeafQdiscs(link, p)
	return append(changed, queued...), err
}

// errNoFQCodel says that the kernel has no fq_codel qdisc (CONFIG_NET_SCH_FQ_CODEL off, its module missing).
var errNoFQCodel = errors.New("this kernel has no fq_codel qdisc")

// ensureLeafQdiscs gives every leaf class of the plan an fq_codel qdisc (handle: the leaf's minor), where HTB's
// default would be a pfifo of the device's queue length: with fq_codel a saturated class keeps its flows apart and
// its queue short, so that a service's replies in the same class do not wait behind a thousand packets of a bulk
// sender. It returns what it wrote; an error wrapping errNoFQCodel when the kernel lacks the qdisc.
func (s shaper) ensureLeafQdiscs(link netlink.Link, p plan) ([]string, error) {
	inner := map[uint16]bool{}
	for _, c := range p.classes {
		inner[c.parent] = true
	}
	qs, err := s.nl.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("listing the qdiscs of %s: %w", link.Attrs().Name, err)
	}
	fqCodel := map[uint32]bool{}
	for _, q := range qs {
		if q.Type() == "fq_codel" {
			fqCodel[q.Attrs().Parent] = true
		}
	}
	var changed []string
	for _, c := range p.classes {
		h := netlink.MakeHandle(major, c.minor)
		if c.minor == minorRoot || inner[c.minor] || fqCodel[h] {
			continue
		}
		q := netlink.NewFqCodel(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Parent: h, Handle: netlink.MakeHandle(c.minor, 0)})
		if err := s.nl.QdiscReplace(q); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
				err = fmt.Errorf("%w (%w)", errNoFQCodel, err)
			}
			return changed, fmt.Errorf("setting the qdisc of class %s of %s to fq_codel: %w", netlink.HandleStr(h), link.Attrs().Name, err)
		}
		changed = append(changed, "qdisc fq_codel under class "+netlink.HandleStr(h))
	}
	return changed, nil
}

// classStats are the counters of one network class on the device: what its inner class sent and how often it hit
// its limit, and what the qdiscs of its leaves dropped.
type classStats struct {
	bytes, packets, overlimits, drops uint64
}

// stats reads the counters of the plan's network classes on link; a class not in the tree is absent.
func (s shaper) stats(link netlink.Link) (map[netClass]classStats, error) {
	classes, err := s.nl.ClassList(link, netlink.MakeHandle(major, 0))
	if err != nil {
		return nil, fmt.Errorf("listing the classes of %s: %w", link.Attrs().Name, err)
	}
	out := map[netClass]classStats{}
	parentOf := map[uint32]uint32{}
	for _, c := range classes {
		a := c.Attrs()
		parentOf[a.Handle] = a.Parent
		for nc := range numClasses {
			if a.Handle != netlink.MakeHandle(major, nc.inner()) {
				continue
			}
			var st classStats
			if b := a.Statistics; b != nil && b.Basic != nil {
				st.bytes, st.packets = b.Basic.Bytes, uint64(b.Basic.Packets)
			}
			if q := a.Statistics; q != nil && q.Queue != nil {
				st.overlimits = uint64(q.Queue.Overlimits)
			}
			out[nc] = st
		}
	}
	qs, err := s.nl.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("listing the qdiscs of %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if q.Type() != "fq_codel" || a.Statistics == nil || a.Statistics.Queue == nil {
			continue
		}
		for nc := range numClasses {
			if parentOf[a.Parent] == netlink.MakeHandle(major, nc.inner()) {
				if st, ok := out[nc]; ok {
					st.drops += uint64(a.Statistics.Queue.Drops)
					out[nc] = st
				}
			}
		}
	}
	return out, nil
}

// ensureClass adds c, or changes it where have's differs; it returns what it wrote ("" for nothing).
func (s shaper) ensureClass(link netlink.Link, c htbClass, have map[uint32]*netlink.HtbClass) (string, error) {
	qh := netlink.MakeHandle(major, 0)
	h := netlink.MakeHandle(major, c.minor)
	parent := netlink.MakeHandle(major, c.parent)
	if c.minor == minorRoot {
		parent = qh
	}
	cur, exists := have[h]
	// The kernel lists a class right under the qdisc with the root as its parent.
	sameParent := exists && (cur.Parent == parent || parent == qh && cur.Parent == netlink.HANDLE_ROOT)
	if sameParent && cur.Rate == c.rate/8 && cur.Ceil == c.ceil/8 {
		return "", nil
	}
	if exists && !sameParent {
		if err := s.nl.ClassDel(cur); err != nil {
			return "", fmt.Errorf("removing class %s of %s to move it: %w", netlink.HandleStr(h), link.Attrs().Name, err)
		}
		exists = false
	}
	nc := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: link.Attrs().Index, Handle: h, Parent: parent},
		netlink.HtbClassAttrs{Rate: c.rate, Ceil: c.ceil})
	op, do := "adding", s.nl.ClassAdd
	if exists {
		op, do = "changing", s.nl.ClassChange
	}
	if err := do(nc); err != nil {
		return "", fmt.Errorf("%s class %s of %s (rate %s, ceil %s): %w", op, netlink.HandleStr(h),
			link.Attrs().Name, bits(c.rate), bits(c.ceil), err)
	}
	return fmt.Sprintf("class %s rate %s ceil %s", netlink.HandleStr(h), bits(c.rate), bits(c.ceil)), nil
}

// removeClasses deletes the classes of have that want lacks, leaves first.
func (s shaper) removeClasses(link netlink.Link, have map[uint32]*netlink.HtbClass, want map[uint32]bool) ([]string, error) {
	var gone []uint32
	for h := range have {
		if !want[h] {
			gone = append(gone, h)
		}
	}
	slices.SortFunc(gone, func(a, b uint32) int { return int(have[a].Level) - int(have[b].Level) })
	var removed []string
	for _, h := range gone {
		if err := s.nl.ClassDel(have[h]); err != nil && !errors.Is(err, unix.ENOENT) {
			return removed, fmt.Errorf("removing class %s of %s: %w", netlink.HandleStr(h), link.Attrs().Name, err)
		}
		removed = append(removed, "removed class "+netlink.HandleStr(h))
	}
	return removed, nil
}

// remove deletes the plugin's tree, giving the device back its kernel default; a root qdisc that is not the
// plugin's is left alone. It reports whether there was one to delete.
func (s shaper) remove(link netlink.Link) (bool, error) {
	root, err := s.rootQdisc(link)
	if err != nil || root == nil || !ours(root) {
		return false, err
	}
	if err := s.nl.QdiscDel(root); err != nil {
		return false, fmt.Errorf("removing the htb qdisc of %s: %w", link.Attrs().Name, err)
	}
	return true, nil
}
