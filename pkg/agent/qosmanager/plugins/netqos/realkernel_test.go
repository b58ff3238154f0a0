package netqos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/ci"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// testNet is a node made of network namespaces, all the test's own: a "node" namespace that routes between two
// pods' namespaces (each behind a veth, as a CNI bridge or routed plugin puts them) and a peer's namespace behind
// the device the plugin shapes, gq0. Nothing in the test process's own namespace changes.
type testNet struct {
	node, peer, batch, service netns.NsHandle
	nodeNL                     *netlink.Handle
}

const (
	peerAddr    = "10.77.0.2"
	batchAddr   = "10.78.1.2"
	serviceAddr = "10.78.2.2"
)

// inNS runs fn on a thread of its own inside ns (netns.None(): where the test runs); the thread is never handed
// back to other goroutines.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no unlock: the thread dies with the goroutine, its namespace with it
		if !ns.IsOpen() {
			errc <- fn()
			return
		}
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("entering a network namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func newNS(t *testing.T) netns.NsHandle {
	t.Helper()
	var ns netns.NsHandle
	err := inNS(netns.None(), func() error {
		var err error
		ns, err = netns.New()
		return err
	})
	if err != nil {
		ci.Skipf(t, "netqos: this test needs to create network namespaces (root): %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

// newTestNet builds the namespaces, the veths, the addresses and the routes.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "netqos: this test needs root to create network namespaces and shape their devices")
	}
	n := &testNet{node: newNS(t), peer: newNS(t), batch: newNS(t), service: newNS(t)}
	var err error
	if n.nodeNL, err = netlink.NewHandleAt(n.node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.nodeNL.Close)
	pairs := []struct {
		nodeDev, nodeAddr, otherDev, otherAddr string
		other                                  netns.NsHandle
		otherRoute                             string // the other side's route back through the node
	}{
		{"gq0", "10.77.0.1/24", "peer0", peerAddr + "/24", n.peer, "10.78.0.0/16"},
		{"gqb", "10.78.1.1/24", "eth0", batchAddr + "/24", n.batch, "0.0.0.0/0"},
		{"gqs", "10.78.2.1/24", "eth0", serviceAddr + "/24", n.service, "0.0.0.0/0"},
	}
	for _, p := range pairs {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.nodeDev}, PeerName: p.otherDev, PeerNamespace: netlink.NsFd(p.other)}
		if err := n.nodeNL.LinkAdd(veth); err != nil {
			t.Fatalf("adding veth %s: %v", p.nodeDev, err)
		}
		up(t, n.nodeNL, p.nodeDev, p.nodeAddr)
		oh, err := netlink.NewHandleAt(p.other)
		if err != nil {
			t.Fatal(err)
		}
		up(t, oh, p.otherDev, p.otherAddr)
		up(t, oh, "lo", "")
		gw := net.ParseIP(strings.Split(p.nodeAddr, "/")[0])
		_, dst, _ := net.ParseCIDR(p.otherRoute)
		other, _ := oh.LinkByName(p.otherDev)
		if err := oh.RouteAdd(&netlink.Route{LinkIndex: other.Attrs().Index, Dst: dst, Gw: gw}); err != nil {
			t.Fatalf("adding the route to %s via %s: %v", dst, gw, err)
		}
		oh.Close()
	}
	up(t, n.nodeNL, "lo", "")
	masquerade(t, n.node, "gq0")
	if err := inNS(n.node, func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}); err != nil {
		t.Fatalf("turning forwarding on in the node's namespace: %v", err)
	}
	return n
}

// masquerade gives the node's namespace what most clusters have for traffic leaving the pod network: source NAT
// to the node's address on dev (nft's `oifname dev masquerade` in a nat chain at priority 100), after which the
// pods' addresses are gone from their packets.
func masquerade(t *testing.T, ns netns.NsHandle, dev string) {
	t.Helper()
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	tb := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "test-nat"})
	ch := conn.AddChain(&nftables.Chain{Name: "postrouting", Table: tb, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	ifname := make([]byte, unix.IFNAMSIZ)
	copy(ifname, dev)
	conn.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
		&expr.Masq{},
	}})
	if err := conn.Flush(); err != nil {
		t.Fatalf("adding source NAT on %s: %v", dev, err)
	}
}

func up(t *testing.T, h *netlink.Handle, dev, cidr string) {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatalf("finding %s: %v", dev, err)
	}
	if cidr != "" {
		addr, err := netlink.ParseAddr(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddrAdd(link, addr); err != nil {
			t.Fatalf("adding %s to %s: %v", cidr, dev, err)
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatalf("setting %s up: %v", dev, err)
	}
}

// receiver counts the bytes received on each port of the peer's, on listeners in the peer's namespace: the batch
// pod sends to batchPort, the service to servicePort (by port, since source NAT gives both the node's address).
type receiver struct {
	mu      sync.Mutex
	bytes   map[int]int64
	sources map[string]bool // the source addresses the peer saw
}

const (
	batchPort   = 5001
	servicePort = 5002
)

func newReceiver(t *testing.T, ns netns.NsHandle) *receiver {
	t.Helper()
	r := &receiver{bytes: map[int]int64{}, sources: map[string]bool{}}
	for _, port := range []int{batchPort, servicePort} {
		var ln net.Listener
		err := inNS(ns, func() error {
			var err error
			ln, err = net.Listen("tcp4", fmt.Sprintf("%s:%d", peerAddr, port)) // the socket stays in ns
			return err
		})
		if err != nil {
			t.Fatalf("listening in the peer's namespace: %v", err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go r.serve(ln, port)
	}
	return r
}

func (r *receiver) serve(ln net.Listener, port int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.sources[c.RemoteAddr().(*net.TCPAddr).IP.String()] = true
		r.mu.Unlock()
		go func() {
			defer c.Close()
			buf := make([]byte, 256<<10)
			for {
				k, err := c.Read(buf)
				r.mu.Lock()
				r.bytes[port] += int64(k)
				r.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
}

func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.bytes)
}

func (r *receiver) got(port int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes[port]
}

// send streams to the peer's port from inside ns for d and returns when it is done.
func send(ns netns.NsHandle, port int, d time.Duration) error {
	var c net.Conn
	err := inNS(ns, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", peerAddr, port), 5*time.Second)
		return err
	})
	if err != nil {
		return fmt.Errorf("connecting to the peer: %w", err)
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	_ = c.SetWriteDeadline(time.Now().Add(d))
	for {
		if _, err := c.Write(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil
			}
			return err
		}
	}
}

// measure streams from the batch and the service pod at once for d and returns each one's received rate in bits
// per second.
func measure(t *testing.T, n *testNet, r *receiver, d time.Duration) (batch, service float64) {
	t.Helper()
	r.reset()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, to := range []struct {
		ns   netns.NsHandle
		port int
	}{{n.batch, batchPort}, {n.service, servicePort}} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = send(to.ns, to.port, d) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the last segments in flight
	secs := d.Seconds()
	return float64(r.got(batchPort)*8) / secs, float64(r.got(servicePort)*8) / secs
}

func netPod(name, ip string, class slov1alpha1.QoSClass) *corev1.Pod {
	p := tu.Pod(name).Namespace("default").UID(name).Label(slov1alpha1.LabelQoSClass, string(class)).
		Phase(corev1.PodRunning).Obj()
	p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	return p
}

func netSpec(beLimit string) *slov1alpha1.NodeSLOSpec {
	on := func(limit string) *slov1alpha1.ResourceQOS {
		return &slov1alpha1.ResourceQOS{NetworkQOS: &slov1alpha1.NetworkQOSCfg{Enable: ptr.To(true),
			NetworkQOS: slov1alpha1.NetworkQOS{EgressLimit: ptr.To(intstr.Parse(limit))}}}
	}
	return &slov1alpha1.NodeSLOSpec{
		SystemStrategy:      &slov1alpha1.SystemStrategy{TotalNetworkBandwidth: ptr.To(resource.MustParse("1G"))},
		ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{BEClass: on(beLimit), LSClass: on("100%")},
	}
}

// TestRealKernelBatchEgressIsCappedAndTheServiceIsNot sends real TCP traffic from a batch pod's and a service pod's
// namespaces through the node's namespace, which masquerades them, to a peer, with the plugin shaping the node's
// device toward the peer:
// the batch pod's throughput holds at its class's limit (then at its own annotation's, lower) while the service's
// is many times that; turned off, the tree and the table are gone and the batch pod is as fast as the service.
func TestRealKernelBatchEgressIsCappedAndTheServiceIsNot(t *testing.T) {
	n := newTestNet(t)
	r := newReceiver(t, n.peer)
	store := statesinformer.NewStore()
	batchPod := netPod("batch", batchAddr, slov1alpha1.QoSBE)
	store.SetPod(batchPod)
	store.SetPod(netPod("service", serviceAddr, slov1alpha1.QoSLS))
	p, err := newIn(qosmanager.Deps{States: store, NetDevice: "gq0"}, n.node)
	if err != nil {
		t.Fatal(err)
	}
	const window = 3 * time.Second

	before, service := measure(t, n, r, window)
	t.Logf("unshaped: batch %.0f Mbit/s, service %.0f Mbit/s", before/1e6, service/1e6)
	if want := map[string]bool{"10.77.0.1": true}; !maps.Equal(r.sources, want) {
		t.Fatalf("the peer saw connections from %v, want only the node's 10.77.0.1 (source NAT)", r.sources)
	}
	expectRate(t, "the batch pod, unshaped (this machine must be able to show a 50 Mbit/s cap)", before, 200e6, 0)

	spec := netSpec("50M")
	runPlugin(t, p, spec)
	batch, service := measure(t, n, r, window)
	t.Logf("beClass egressLimit 50M: batch %.1f Mbit/s, service %.0f Mbit/s", batch/1e6, service/1e6)
	expectRate(t, "the batch pod, under its class's limit of 50 Mbit/s", batch, 50e6*0.5, 50e6*1.3)
	expectRate(t, "the service beside the capped batch pod", service, max(4*batch, 150e6), 0)

	// The pod's own annotation lowers its limit inside its class's.
	batchPod = batchPod.DeepCopy()
	batchPod.Annotations = map[string]string{slov1alpha1.AnnotationNetworkQOSAlias: `{"egressLimit": "20M"}`}
	batchPod.ResourceVersion = "2"
	store.SetPod(batchPod)
	runPlugin(t, p, spec)
	batch, _ = measure(t, n, r, window)
	t.Logf("the pod's own egressLimit 20M: batch %.1f Mbit/s", batch/1e6)
	expectRate(t, "the batch pod, under its own limit of 20 Mbit/s", batch, 20e6*0.5, 20e6*1.3)

	// A second run with nothing new writes nothing.
	link, err := n.nodeNL.LinkByName("gq0")
	if err != nil {
		t.Fatal(err)
	}
	pl := buildPlan(mustConfigs(t, spec, 1e9), 1e9, store.GetAllPods(), podLimits{"batch": 20e6}, p.minors)
	if changed, err := p.shaper.apply(link, pl); err != nil || len(changed) > 0 {
		t.Errorf("applying the same plan again changed %v (err %v)", changed, err)
	}
	if wrote, err := p.rules.apply("gq0", pl.rules); err != nil || wrote {
		t.Errorf("applying the same rules again wrote %v (err %v)", wrote, err)
	}

	off := netSpec("50M")
	off.ResourceQOSStrategy.BEClass.NetworkQOS.Enable = ptr.To(false)
	off.ResourceQOSStrategy.LSClass.NetworkQOS.Enable = ptr.To(false)
	runPlugin(t, p, off)
	expectRemoved(t, n, p, link)
	batch, _ = measure(t, n, r, window)
	t.Logf("turned off: batch %.0f Mbit/s", batch/1e6)
	expectRate(t, "the batch pod, turned off", batch, 150e6, 0)
}

func runPlugin(t *testing.T, p *Plugin, spec *slov1alpha1.NodeSLOSpec) {
	t.Helper()
	if err := p.Validate(spec); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
}

// expectRate fails t when rate (bits per second) is below lo or, hi > 0, above hi.
func expectRate(t *testing.T, what string, rate, lo, hi float64) {
	t.Helper()
	if rate < lo || hi > 0 && rate > hi {
		t.Errorf("%s: %.1f Mbit/s, want %.1f..%.1f", what, rate/1e6, lo/1e6, hi/1e6)
	}
}

// expectRemoved checks that the plugin's qdisc and table are gone from the node's namespace.
func expectRemoved(t *testing.T, n *testNet, p *Plugin, link netlink.Link) {
	t.Helper()
	if root, err := p.shaper.rootQdisc(link); err != nil || (root != nil && ours(root)) {
		t.Errorf("turned off, the device's root qdisc is still the plugin's: %v (err %v)", root, err)
	}
	conn, err := nftables.New(nftables.WithNetNSFd(int(n.node)))
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := conn.ListTablesOfFamily(nftables.TableFamilyINet); err != nil || len(ts) != 0 { // test-nat is ip, not inet
		t.Errorf("turned off, the node's namespace still has inet tables %v (err %v)", ts, err)
	}
}

func mustConfigs(t *testing.T, spec *slov1alpha1.NodeSLOSpec, total uint64) [numClasses]classConfig {
	t.Helper()
	cfg, err := classConfigs(spec, total)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRealKernelRefusesWhatItCannotEnforce gives the plugin a namespace of its own and configurations it cannot
// enforce: each is an error that names why, and nothing is written.
func TestRealKernelRefusesWhatItCannotEnforce(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skipf(t, "netqos: this test needs root to create network namespaces")
	}
	ns := newNS(t)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	up(t, h, "lo", "")
	noTotal := netSpec("50M")
	noTotal.SystemStrategy = nil
	tooMuch := netSpec("2G")
	tests := []struct {
		name, device string
		spec         *slov1alpha1.NodeSLOSpec
		wantErr      string
	}{
		{name: "a device that does not exist", device: "nope0", spec: netSpec("50M"), wantErr: "finding the network QoS device nope0 (--net-qos-device)"},
		{name: "no default route to find one by", spec: netSpec("50M"), wantErr: "has no IPv4 default route"},
		{name: "no total, and a device without a link speed", device: "lo", spec: noTotal, wantErr: "device lo reports no link speed; set systemStrategy.totalNetworkBandwidth"},
		{name: "a limit above the total", device: "lo", spec: tooMuch, wantErr: "egressLimit: 2Gbit/s is above the node's total 1Gbit/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newIn(qosmanager.Deps{States: statesinformer.NewStore(), NetDevice: tt.device, SysRoot: t.TempDir()}, ns)
			if err != nil {
				t.Fatal(err)
			}
			for what, err := range map[string]error{"Validate": p.Validate(tt.spec), "Run": p.Run(context.Background(), tt.spec)} {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: err = %v, want one containing %q", what, err, tt.wantErr)
				}
			}
			lo, err := h.LinkByName("lo")
			if err != nil {
				t.Fatal(err)
			}
			if root, _ := p.shaper.rootQdisc(lo); root != nil && ours(root) {
				t.Errorf("a refused configuration wrote the tree: %v", root)
			}
		})
	}

	// Off, with no way to look for what an earlier agent left (here: a namespace handle that is closed): said
	// once, and the next runs do nothing.
	p, err := newIn(qosmanager.Deps{States: statesinformer.NewStore(), NetDevice: "lo"}, ns)
	if err != nil {
		t.Fatal(err)
	}
	p.rules.nsFD = 1 << 20 // no such descriptor
	off := netSpec("50M")
	off.ResourceQOSStrategy = nil
	if err := p.Run(context.Background(), off); err != nil || !p.restored {
		t.Errorf("off, unable to look: err = %v, restored %v; want nil, true", err, p.restored)
	}
}
