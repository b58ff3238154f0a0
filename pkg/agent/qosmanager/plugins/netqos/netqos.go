package netqos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// Name is the plugin's name in --qos-plugins, logs and metrics.
const Name = "netqos"

// DefaultInterval is how often the plugin runs: a new pod's packets join its class within a second of the agent
// seeing its IP. A run with nothing new reads the tree and the table and writes nothing.
const DefaultInterval = time.Second

// Plugin shapes the node's outgoing traffic per network class (doc.go has the tree and how packets find their
// class).
type Plugin struct {
	d      qosmanager.Deps
	shaper shaper
	rules  classifier
	minors *minors

	device   string // the device the tree was last written on: what turning off must clean
	restored bool   // off, and nothing left to undo

	noFQCodel bool // the kernel has no fq_codel: leaves keep HTB's default

	loaded bool       // the state file was read
	saved  *savedRoot // the root qdisc the tree replaced, to put back
	looked string     // the device whose root qdisc was looked at since network QoS was turned on

	shapedMu sync.Mutex
	shaped   string // the device whose tree the metrics read (Collect runs on the scraper's goroutine)

	egress   []string  // the egress devices the rules match (egressDevices), the shaped one first
	egressAt time.Time // when they were listed
	checked  classifyCheck

	bad    *qosmanager.Warnings // pods' network QoS annotations that cannot be used
	partly *qosmanager.Warnings // pods' network QoS annotations used with fields left out
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
	_ prometheus.Collector        = &Plugin{}
)

// New returns the plugin, for the agent's own network namespace (the host's, with hostNetwork). It needs
// Deps.States and Deps.Clock; Events, when set, receives the classify check's verdicts (check.go).
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	return newIn(d, netns.None())
}

// newIn returns the plugin for the network namespace ns (netns.None() for the agent's own).
func newIn(d qosmanager.Deps, ns netns.NsHandle) (*Plugin, error) {
	if err := d.Need(Name, "States", "Clock"); err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("building the %s plugin: opening a netlink socket: %w", Name, err)
	}
	return &Plugin{d: d, shaper: shaper{nl: h}, rules: classifier{nsFD: int(ns)}, minors: newMinors(),
		bad:    qosmanager.NewWarnings(d.Events, ReasonBadAnnotation),
		partly: qosmanager.NewWarnings(d.Events, qosmanager.ReasonAnnotationFieldsIgnored)}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin: with network QoS on for some class, the device must exist, the
// total must be known (systemStrategy.totalNetworkBandwidth, else the link speed the kernel reports), every value
// must be a percentage in 0..100 or a bandwidth, no limit above the total, 0 or below its request, the requests
// must fit in the total, and lsrClass may not set it (LSR pods share the LS class). Off, anything is accepted.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	if !enabled(spec) {
		return nil
	}
	if err := p.onHostNetwork(); err != nil {
		return err
	}
	_, _, _, err := p.resolve(spec)
	return err
}

// resolve finds what spec asks of this node: the device, the total bandwidth and the classes' settings.
func (p *Plugin) resolve(spec *slov1alpha1.NodeSLOSpec) (netlink.Link, uint64, [numClasses]classConfig, error) {
	var cfg [numClasses]classConfig
	link, err := p.link()
	if err != nil {
		return nil, 0, cfg, err
	}
	total, err := p.total(spec, link)
	if err != nil {
		return nil, 0, cfg, err
	}
	cfg, err = classConfigs(spec, total)
	return link, total, cfg, err
}

// onHostNetwork is an error when the agent can tell that it is not in the host's network namespace (hostNetwork:
// false), where it would shape its own pod's device instead of the node's. Without the host's PID 1 to compare
// with (hostPID: false) it cannot tell, and trusts the deployment.
func (p *Plugin) onHostNetwork() error {
	if p.d.Host == nil || p.rules.nsFD >= 0 {
		return nil
	}
	host, err := os.Readlink(p.d.Host.Path("proc/1/ns/net"))
	if err != nil {
		return nil //nolint:nilerr // cannot tell: see above
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err == nil && self != host {
		return fmt.Errorf("network QoS needs the agent on the host's network (hostNetwork: true): it is in %s, the host in %s", self, host)
	}
	return nil
}

// Run implements qosmanager.RunPlugin.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	if err := p.loadSaved(); err != nil {
		return err
	}
	if !enabled(spec) {
		return p.undo(ctx)
	}
	link, total, cfg, err := p.resolve(spec)
	if err != nil {
		return err
	}
	pods := p.d.States.GetAllPods()
	own := podLimits{}
	live := map[types.UID]bool{}
	for _, m := range pods {
		live[m.Pod.UID] = true
		c := classOf(m.PodClass)
		if c == classSystem || !cfg[c].enabled || m.Pod.Spec.HostNetwork {
			continue
		}
		limit, ok, partly, err := podLimit(m.Pod, total, cfg[c].ceil)
		_, raw, _ := annotation(m.Pod)
		switch {
		case err != nil:
			p.bad.Warn(ctx, m.Pod, raw, err, "its class "+classNames[c]+"'s network QoS applies")
		case ok:
			own[m.Pod.UID] = limit
			p.bad.Fine(m.Pod)
		default:
			p.bad.Fine(m.Pod)
		}
		p.partly.Partly(ctx, m.Pod, raw, partly)
	}
	p.bad.Prune(func(uid types.UID) bool { return live[uid] })
	p.partly.Prune(func(uid types.UID) bool { return live[uid] })
	p.minors.keep(own)
	pl := buildPlan(cfg, total, pods, own, p.minors)
	name := link.Attrs().Name
	if p.device != "" && p.device != name {
		p.setShaped("")
		p.checked.reset()
		if err := p.removeFrom(ctx, p.device); err != nil {
			return err
		}
	}
	p.device, p.restored = name, false
	if err := p.remember(ctx, link); err != nil {
		return err
	}
	changed, err := p.shaper.apply(link, pl, !p.noFQCodel)
	if len(changed) > 0 {
		klog.FromContext(ctx).V(1).Info("shaped the node's egress", "device", name, "changes", changed)
	}
	if errors.Is(err, errNoFQCodel) {
		// Said once: the leaves keep HTB's default pfifo, which shapes the same but queues up to the device's
		// queue length in front of a class's packets.
		p.noFQCodel = true
		klog.FromContext(ctx).Info("this kernel has no fq_codel: the network classes' leaves keep HTB's default pfifo", "reason", err.Error())
		err = nil
	}
	if err != nil {
		return err
	}
	p.setShaped(name)
	devices, err := p.egressDevices(link)
	if err != nil {
		return err
	}
	wrote, err := p.rules.apply(devices, pl.rules)
	if wrote {
		klog.FromContext(ctx).V(1).Info("classified pods' egress", "devices", devices, "pods", len(pl.rules))
		p.checked.rewritten = true // its rules were made again: their counters start from zero
	}
	if err != nil {
		return err
	}
	p.check(ctx, link, devices, pl)
	return nil
}

// undo removes the tree and the table once after network QoS is turned off (or at the first run with it off,
// which cleans what an agent before this one left).
func (p *Plugin) undo(ctx context.Context) error {
	if p.restored {
		return nil
	}
	dev := p.device
	if dev == "" {
		if link, err := p.link(); err == nil {
			dev = link.Attrs().Name
		}
	}
	err := p.removeFrom(ctx, dev)
	if err != nil && p.device == "" {
		// Nothing was written by this process, and what an agent before it may have left cannot even be looked
		// at (no CAP_NET_ADMIN, no nf_tables): said once, not retried every second.
		klog.FromContext(ctx).Info("network QoS is off; could not look for a tree or table left by an earlier agent", "err", err.Error())
		err = nil
	}
	if err != nil {
		return err
	}
	p.setShaped("")
	p.checked.reset()
	p.device, p.restored, p.looked, p.egress = "", true, "", nil
	return nil
}

// removeFrom removes the table and the tree on dev ("" for none known: the table only).
func (p *Plugin) removeFrom(ctx context.Context, dev string) error {
	var errs []error
	if removed, err := p.rules.remove(); err != nil {
		errs = append(errs, err)
	} else if removed {
		klog.FromContext(ctx).Info("removed the network QoS classification", "table", "inet "+tableName)
	}
	if dev != "" {
		link, err := p.shaper.nl.LinkByName(dev)
		var notFound netlink.LinkNotFoundError
		switch {
		case errors.As(err, &notFound):
		case err != nil:
			errs = append(errs, fmt.Errorf("finding device %s: %w", dev, err))
		default:
			if removed, err := p.shaper.remove(link); err != nil {
				errs = append(errs, err)
			} else {
				if removed {
					klog.FromContext(ctx).Info("removed the network QoS tree", "device", dev)
				}
				errs = append(errs, p.restore(ctx, link))
			}
		}
	}
	return errors.Join(errs...)
}

// link is the device to shape: Deps.NetDevice, else the device of the IPv4 default route.
func (p *Plugin) link() (netlink.Link, error) {
	if dev := p.d.NetDevice; dev != "" {
		link, err := p.shaper.nl.LinkByName(dev)
		if err != nil {
			return nil, fmt.Errorf("finding the network QoS device %s (--net-qos-device): %w", dev, err)
		}
		return link, nil
	}
	routes, err := p.shaper.nl.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing routes to find the default route's device: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil && (!r.Dst.IP.Equal(net.IPv4zero) || !isZeroMask(r.Dst.Mask)) {
			continue
		}
		if r.LinkIndex > 0 {
			link, err := p.shaper.nl.LinkByIndex(r.LinkIndex)
			if err != nil {
				return nil, fmt.Errorf("finding the default route's device (index %d): %w", r.LinkIndex, err)
			}
			return link, nil
		}
	}
	return nil, errors.New("the node has no IPv4 default route to find the network QoS device by; set --net-qos-device")
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

// total is the node's egress bandwidth in bits per second: systemStrategy.totalNetworkBandwidth, else the speed the
// kernel reports for link (in Mbit/s, in sysfs).
func (p *Plugin) total(spec *slov1alpha1.NodeSLOSpec, link netlink.Link) (uint64, error) {
	if s := spec.SystemStrategy; s != nil && s.TotalNetworkBandwidth != nil {
		v := s.TotalNetworkBandwidth.Value()
		if v <= 0 {
			return 0, fmt.Errorf("systemStrategy.totalNetworkBandwidth %s is not a bandwidth", s.TotalNetworkBandwidth)
		}
		return uint64(v), nil
	}
	name := link.Attrs().Name
	sysRoot := p.d.SysRoot
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	raw, err := os.ReadFile(filepath.Join(sysRoot, "class", "net", name, "speed"))
	mbits, perr := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil || perr != nil || mbits <= 0 {
		return 0, fmt.Errorf("network QoS needs the node's bandwidth: device %s reports no link speed; set "+
			"systemStrategy.totalNetworkBandwidth", name)
	}
	return uint64(mbits) * 1_000_000, nil
}

// Asks implements qosmanager.ReportingPlugin: networkQOS is on for a class.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool { return enabled(spec) }
