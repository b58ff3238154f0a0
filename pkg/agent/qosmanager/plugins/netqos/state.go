package netqos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"k8s.io/klog/v2"

	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// StateFile is the state file's name under Deps.StateDir: the root qdisc the plugin replaced, so that turning
// network QoS off (or an uninstall) puts it back after an agent restart too.
const StateFile = "netqos.json"

// savedRoot is the root qdisc a device had before the plugin's HTB replaced it: one a person or another program
// set (tc-added qdiscs have a handle), not the kernel's default (handle 0), which comes back by itself.
type savedRoot struct {
	Device string `json:"device"`
	Kind   string `json:"kind"`
	Handle uint32 `json:"handle"`
}

// loadSaved reads the state file once; a missing file (or no state directory) is nothing saved.
func (p *Plugin) loadSaved() error {
	if p.loaded {
		return nil
	}
	if p.d.StateDir != "" {
		path := filepath.Join(p.d.StateDir, StateFile)
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("reading %s: %w", path, err)
		default:
			var s savedRoot
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("reading %s (the root qdisc network QoS replaced; delete the file to forget it, and the kernel's default comes back when network QoS is turned off): %w", path, err)
			}
			if s.Device != "" {
				p.saved = &s
			}
		}
	}
	p.loaded = true
	return nil
}

// persist writes what is saved (an empty record for nothing) where there is a state directory.
func (p *Plugin) persist() error {
	if p.d.StateDir == "" {
		return nil
	}
	s := savedRoot{}
	if p.saved != nil {
		s = *p.saved
	}
	return qosmanager.WriteStateJSON(p.d.StateDir, StateFile, s)
}

// remember saves link's root qdisc before the plugin replaces it, when it is one someone set; it looks once per
// device while network QoS stays on.
func (p *Plugin) remember(ctx context.Context, link netlink.Link) error {
	name := link.Attrs().Name
	if p.looked == name || p.saved != nil && p.saved.Device == name {
		return nil
	}
	root, err := p.shaper.rootQdisc(link)
	if err != nil {
		return err
	}
	p.looked = name
	if root == nil || ours(root) || root.Attrs().Handle == 0 {
		return nil
	}
	p.saved = &savedRoot{Device: name, Kind: root.Type(), Handle: root.Attrs().Handle}
	if err := p.persist(); err != nil {
		p.saved = nil
		return fmt.Errorf("saving the root qdisc of %s (%s %s) before replacing it: %w", name, root.Type(), netlink.HandleStr(root.Attrs().Handle), err)
	}
	klog.FromContext(ctx).Info("replacing the device's root qdisc; it comes back when network QoS is turned off",
		"device", name, "kind", root.Type(), "handle", netlink.HandleStr(root.Attrs().Handle))
	return nil
}

// restore puts back the root qdisc saved for link once the plugin's tree is gone, with the kernel's defaults for
// its options (a qdisc whose kind needs options, such as tbf, cannot come back: the kernel's default stays, and
// the log says so), unless something else has set a root qdisc meanwhile. Either way the record is dropped.
func (p *Plugin) restore(ctx context.Context, link netlink.Link) error {
	s := p.saved
	if s == nil || s.Device != link.Attrs().Name {
		return nil
	}
	log := klog.FromContext(ctx).WithValues("device", s.Device, "kind", s.Kind, "handle", netlink.HandleStr(s.Handle))
	root, err := p.shaper.rootQdisc(link)
	if err != nil {
		return err
	}
	switch {
	case root != nil && root.Attrs().Handle != 0:
		log.Info("not putting back the root qdisc network QoS replaced: another one is there now", "now", root.Type())
	default:
		q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: s.Handle, Parent: netlink.HANDLE_ROOT}, QdiscType: s.Kind}
		if err := p.shaper.nl.QdiscReplace(q); err != nil {
			log.Error(err, "could not put back the root qdisc network QoS replaced; the kernel's default stays")
		} else {
			log.Info("put back the root qdisc network QoS replaced (with the kernel's default options)")
		}
	}
	p.saved = nil
	return p.persist()
}
