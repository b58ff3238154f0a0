package netqos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/ci"
	"github.com/gleaner-sh/gleaner/test/netnstest"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// testNet is a node made of network namespaces, all the test's own: a "node" namespace that routes between two
// pods' namespaces (each behind a veth, as a CNI bridge or routed plugin puts them) and masquerades their traffic,
// and a peer's namespace behind the device the plugin shapes, gq0.
type testNet struct {
	node, peer, batch, service netns.NsHandle
	nodeNL                     *netlink.Handle
}

const (
	peerAddr    = "10.77.0.2"
	batchAddr   = "10.78.1.2"
	serviceAddr = "10.78.2.2"
	// The batch pod sends to batchPort, the service to servicePort: the peer tells them apart by port, since source
	// NAT gives both the node's address.
	batchPort   = 5001
	servicePort = 5002
)

// newTestNet builds the namespaces, the veths, the addresses, the routes and the source NAT.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "netqos: this test needs root to create network namespaces and shape their devices")
	}
	n := &testNet{node: netnstest.New(t), peer: netnstest.New(t), batch: netnstest.New(t), service: netnstest.New(t)}
	n.nodeNL = netnstest.Handle(t, n.node)
	for _, p := range []struct {
		nodeDev, nodeAddr, otherDev, otherAddr string
		other                                  netns.NsHandle
		otherRoute                             string // the other side's route back through the node
	}{
		{"gq0", "10.77.0.1", "peer0", peerAddr, n.peer, "10.78.0.0/16"},
		{"gqb", "10.78.1.1", "eth0", batchAddr, n.batch, "0.0.0.0/0"},
		{"gqs", "10.78.2.1", "eth0", serviceAddr, n.service, "0.0.0.0/0"},
	} {
		netnstest.Veth(t, n.nodeNL, p.nodeDev, p.otherDev, p.other)
		netnstest.Up(t, n.nodeNL, p.nodeDev, p.nodeAddr+"/24")
		oh := netnstest.Handle(t, p.other)
		netnstest.Up(t, oh, p.otherDev, p.otherAddr+"/24")
		netnstest.Up(t, oh, "lo", "")
		netnstest.Route(t, oh, p.otherDev, p.otherRoute, p.nodeAddr)
	}
	netnstest.Up(t, n.nodeNL, "lo", "")
	masquerade(t, n.node, "gq0")
	if err := netnstest.Do(n.node, func() error {
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

// measure streams from the batch and the service pod at once for d and returns each one's received rate in bits
// per second.
func measure(t *testing.T, n *testNet, r *netnstest.Receiver, d time.Duration) (batch, service float64) {
	t.Helper()
	return measureTo(t, n, r, peerAddr, d)
}

// measureTo is measure toward the peer's address dst. It first waits until the last measurement's connections are
// read to their end: on a busy machine the receiver falls behind, and what the last one left in the buffers would
// count as this one's.
func measureTo(t *testing.T, n *testNet, r *netnstest.Receiver, dst string, d time.Duration) (batch, service float64) {
	t.Helper()
	if late, err := r.Drain(10 * time.Second); err != nil {
		t.Fatalf("the last measurement's connections: %v", err)
	} else if late > 0 {
		t.Logf("%.1f MB of the last measurement's traffic were still to be read", float64(late)/1e6)
	}
	r.Reset()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, from := range []struct {
		ns   netns.NsHandle
		port int
	}{{n.batch, batchPort}, {n.service, servicePort}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = netnstest.Send(from.ns, fmt.Sprintf("%s:%d", dst, from.port), d)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the last segments in flight
	return float64(r.Bytes(batchPort)*8) / d.Seconds(), float64(r.Bytes(servicePort)*8) / d.Seconds()
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
	r := netnstest.Listen(t, n.peer, peerAddr, batchPort, servicePort)
	store := statesinformer.NewStore()
	batchPod := netPod("batch", batchAddr, slov1alpha1.QoSBE)
	store.SetPod(batchPod)
	store.SetPod(netPod("service", serviceAddr, slov1alpha1.QoSLS))
	p, err := newIn(qosmanager.Deps{Clock: clock.RealClock{}, States: store, NetDevice: "gq0"}, n.node)
	if err != nil {
		t.Fatal(err)
	}
	const window = 3 * time.Second

	before, service := measure(t, n, r, window)
	t.Logf("unshaped: batch %.0f Mbit/s, service %.0f Mbit/s", before/1e6, service/1e6)
	if want := map[string]bool{"10.77.0.1": true}; !maps.Equal(r.Sources(), want) {
		t.Fatalf("the peer saw connections from %v, want only the node's 10.77.0.1 (source NAT)", r.Sources())
	}
	expectRate(t, "the batch pod, unshaped (this machine must be able to show a 50 Mbit/s cap)", before, 200e6, 0)

	spec := netSpec("50M")
	runPlugin(t, p, spec)
	expectFQCodelLeaves(t, n, p)
	before2 := classCounters(t, p)
	batch, service := measure(t, n, r, window)
	t.Logf("beClass egressLimit 50M: batch %.1f Mbit/s, service %.0f Mbit/s", batch/1e6, service/1e6)
	expectRate(t, "the batch pod, under its class's limit of 50 Mbit/s", batch, 50e6*0.5, 50e6*1.3)
	expectRate(t, "the service beside the capped batch pod", service, max(4*batch, 150e6), 0)
	// The class's counters saw what the batch pod sent, and its limit holding it back.
	after := classCounters(t, p)
	sent := after[`gleaner_agent_netqos_sent_bytes_total{class="BE",device="gq0"}`] - before2[`gleaner_agent_netqos_sent_bytes_total{class="BE",device="gq0"}`]
	if got := sent * 8 / window.Seconds(); got < batch*0.8 || got > batch*1.5 {
		t.Errorf("class BE's counter says %.1f Mbit/s, the peer received %.1f: counters %v", got/1e6, batch/1e6, after)
	}
	if after[`gleaner_agent_netqos_overlimits_total{class="BE",device="gq0"}`] == 0 {
		t.Errorf("class BE was held at 50 Mbit/s but counts no overlimits: %v", after)
	}
	if _, ok := after[`gleaner_agent_netqos_dropped_packets_total{class="LS",device="gq0"}`]; !ok {
		t.Errorf("no dropped-packets counter for class LS: %v", after)
	}

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
	if changed, err := p.shaper.apply(link, pl, !p.noFQCodel); err != nil || len(changed) > 0 {
		t.Errorf("applying the same plan again changed %v (err %v)", changed, err)
	}
	if wrote, err := p.rules.apply(p.egress, pl.rules); err != nil || wrote {
		t.Errorf("applying the same rules again wrote %v (err %v)", wrote, err)
	}

	off := netSpec("50M")
	off.ResourceQOSStrategy.BEClass.NetworkQOS.Enable = ptr.To(false)
	off.ResourceQOSStrategy.LSClass.NetworkQOS.Enable = ptr.To(false)
	runPlugin(t, p, off)
	expectRemoved(t, n, p, link)
	if c := classCounters(t, p); len(c) != 0 {
		t.Errorf("turned off, the plugin still exports class counters %v", c)
	}
	batch, _ = measure(t, n, r, window)
	t.Logf("turned off: batch %.0f Mbit/s", batch/1e6)
	expectRate(t, "the batch pod, turned off", batch, 150e6, 0)
}

// classCounters are the plugin's metrics now, by name and labels.
func classCounters(t *testing.T, p *Plugin) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}

// expectFQCodelLeaves checks that every leaf class of the tree on gq0 has an fq_codel qdisc, and no inner class;
// on a kernel without fq_codel, that the plugin found so and left HTB's default under every leaf.
func expectFQCodelLeaves(t *testing.T, n *testNet, p *Plugin) {
	t.Helper()
	want := "fq_codel"
	if p.noFQCodel {
		t.Logf("this kernel has no fq_codel: the leaves keep HTB's default (the fq_codel path is proven where the kernel has it)")
		want = ""
	}
	link, err := n.nodeNL.LinkByName("gq0")
	if err != nil {
		t.Fatal(err)
	}
	classes, err := n.nodeNL.ClassList(link, netlink.MakeHandle(major, 0))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := n.nodeNL.QdiscList(link)
	if err != nil {
		t.Fatal(err)
	}
	under := map[uint32]string{}
	for _, q := range qs {
		under[q.Attrs().Parent] = q.Type()
	}
	isParent := map[uint32]bool{}
	for _, c := range classes {
		isParent[c.Attrs().Parent] = true
	}
	leaves := 0
	for _, c := range classes {
		h := c.Attrs().Handle
		switch {
		case isParent[h] && under[h] != "":
			t.Errorf("inner class %s has a qdisc %s", netlink.HandleStr(h), under[h])
		case !isParent[h]:
			leaves++
			if under[h] != want {
				t.Errorf("leaf class %s has qdisc %q, want %q", netlink.HandleStr(h), under[h], want)
			}
		}
	}
	if leaves < 3 {
		t.Errorf("%d leaf classes, want one per network class at least", leaves)
	}
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
	ns := netnstest.New(t)
	h := netnstest.Handle(t, ns)
	netnstest.Up(t, h, "lo", "")
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
			p, err := newIn(qosmanager.Deps{Clock: clock.RealClock{}, States: statesinformer.NewStore(), NetDevice: tt.device, SysRoot: t.TempDir()}, ns)
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
	p, err := newIn(qosmanager.Deps{Clock: clock.RealClock{}, States: statesinformer.NewStore(), NetDevice: "lo"}, ns)
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

// TestRealKernelPutsBackTheRootQdisc: a root qdisc someone set on the device (a pfifo with handle 1:) is saved under
// the state directory before the tree replaces it, and put back when network QoS is turned off, by an agent that
// restarted in between; a state file that cannot be read is an error naming it.
func TestRealKernelPutsBackTheRootQdisc(t *testing.T) {
	n := newTestNet(t)
	link, err := n.nodeNL.LinkByName("gq0")
	if err != nil {
		t.Fatal(err)
	}
	mine := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}, QdiscType: "pfifo"}
	if err := n.nodeNL.QdiscReplace(mine); err != nil {
		t.Fatal(err)
	}
	store := statesinformer.NewStore()
	store.SetPod(netPod("batch", batchAddr, slov1alpha1.QoSBE))
	state := t.TempDir()
	deps := qosmanager.Deps{Clock: clock.RealClock{}, States: store, NetDevice: "gq0", StateDir: state}
	p, err := newIn(deps, n.node)
	if err != nil {
		t.Fatal(err)
	}
	runPlugin(t, p, netSpec("50M"))
	if root, err := p.shaper.rootQdisc(link); err != nil || root == nil || !ours(root) {
		t.Fatalf("on: root qdisc %v (err %v), want the plugin's htb", root, err)
	}
	if b, err := os.ReadFile(filepath.Join(state, StateFile)); err != nil || !strings.Contains(string(b), `"kind":"pfifo"`) {
		t.Errorf("state file %q (err %v), want the pfifo saved", b, err)
	}

	restarted, err := newIn(deps, n.node)
	if err != nil {
		t.Fatal(err)
	}
	off := netSpec("50M")
	off.ResourceQOSStrategy.BEClass.NetworkQOS.Enable = ptr.To(false)
	off.ResourceQOSStrategy.LSClass.NetworkQOS.Enable = ptr.To(false)
	runPlugin(t, restarted, off)
	root, err := restarted.shaper.rootQdisc(link)
	if err != nil || root == nil || root.Type() != "pfifo" || root.Attrs().Handle != netlink.MakeHandle(1, 0) {
		t.Errorf("off after a restart: root qdisc %v (err %v), want the pfifo 1: back", root, err)
	}
	if b, err := os.ReadFile(filepath.Join(state, StateFile)); err != nil || strings.Contains(string(b), "pfifo") {
		t.Errorf("state file %q (err %v) after putting it back, want it empty", b, err)
	}

	if err := os.WriteFile(filepath.Join(state, StateFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken, err := newIn(deps, n.node)
	if err != nil {
		t.Fatal(err)
	}
	if err := broken.Run(context.Background(), off); err == nil || !strings.Contains(err.Error(), filepath.Join(state, StateFile)) {
		t.Errorf("a state file that cannot be read: %v, want an error naming it", err)
	}
}
