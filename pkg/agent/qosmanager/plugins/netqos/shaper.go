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
func (s shaper) apply(link netlink.Link, p plan) (changed []string, err error) {
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
	return append(changed, gone...), err
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
