package netqos

import (
	"maps"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/netnstest"
)

const (
	nodeOverlayAddr = "10.90.0.1"
	peerOverlayAddr = "10.90.0.2"
)

// newOverlayNet is newTestNet with a VXLAN overlay between the node and the peer, as flannel's vxlan backend or
// Calico's VXLAN mode build one: vx0 on each side (VNI 42, UDP 4789) over gq0 and peer0, the peer's pod network
// address on it, and the peer's route back to the node's pods through the overlay. Pods' packets to the peer's
// overlay address leave the node's IP stack through vx0, and gq0 carries them inside UDP from the node's address.
func newOverlayNet(t *testing.T) *testNet {
	t.Helper()
	n := newTestNet(t)
	peerNL := netnstest.Handle(t, n.peer)
	for _, side := range []struct {
		h                          *netlink.Handle
		under, local, remote, addr string
	}{
		{n.nodeNL, "gq0", "10.77.0.1", peerAddr, nodeOverlayAddr},
		{peerNL, "peer0", peerAddr, "10.77.0.1", peerOverlayAddr},
	} {
		under, err := side.h.LinkByName(side.under)
		if err != nil {
			t.Fatal(err)
		}
		vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "vx0"}, VxlanId: 42, VtepDevIndex: under.Attrs().Index,
			SrcAddr: net.ParseIP(side.local), Group: net.ParseIP(side.remote), Port: 4789}
		if err := side.h.LinkAdd(vx); err != nil {
			t.Fatalf("adding a VXLAN device over %s: %v", side.under, err)
		}
		netnstest.Up(t, side.h, "vx0", side.addr+"/24")
	}
	vx, err := peerNL.LinkByName("vx0")
	if err != nil {
		t.Fatal(err)
	}
	_, pods, _ := net.ParseCIDR("10.78.0.0/16")
	if err := peerNL.RouteReplace(&netlink.Route{LinkIndex: vx.Attrs().Index, Dst: pods, Gw: net.ParseIP(nodeOverlayAddr)}); err != nil {
		t.Fatalf("routing the node's pods through the overlay: %v", err)
	}
	return n
}

// TestRealKernelOverlayTrafficIsShaped sends from a batch and a service pod to an address on the peer's side of a
// VXLAN overlay, with the plugin shaping gq0, the device under the overlay: the encapsulated packets carry the class
// their inner packet was given, so the batch pod holds at its class's limit while the service is many times faster.
func TestRealKernelOverlayTrafficIsShaped(t *testing.T) {
	n := newOverlayNet(t)
	r := netnstest.Listen(t, n.peer, peerOverlayAddr, batchPort, servicePort)
	store := statesinformer.NewStore()
	store.SetPod(netPod("batch", batchAddr, slov1alpha1.QoSBE))
	store.SetPod(netPod("service", serviceAddr, slov1alpha1.QoSLS))
	p, err := newIn(qosmanager.Deps{Clock: clock.RealClock{}, States: store, NetDevice: "gq0"}, n.node)
	if err != nil {
		t.Fatal(err)
	}
	const window = 3 * time.Second

	before, service := measureTo(t, n, r, peerOverlayAddr, window)
	t.Logf("unshaped, through the overlay: batch %.0f Mbit/s, service %.0f Mbit/s", before/1e6, service/1e6)
	if want := map[string]bool{batchAddr: true, serviceAddr: true}; !maps.Equal(r.Sources(), want) {
		t.Fatalf("the peer saw connections from %v, want the pods' own addresses %v (the overlay carries them unNATed)", r.Sources(), want)
	}
	expectRate(t, "the batch pod, unshaped (this machine must be able to show a 50 Mbit/s cap)", before, 200e6, 0)

	runPlugin(t, p, netSpec("50M"))
	before2 := classCounters(t, p)
	batch, service := measureTo(t, n, r, peerOverlayAddr, window)
	t.Logf("beClass egressLimit 50M, through the overlay: batch %.1f Mbit/s, service %.0f Mbit/s", batch/1e6, service/1e6)
	expectRate(t, "the batch pod through the overlay, under its class's limit of 50 Mbit/s", batch, 50e6*0.5, 50e6*1.3)
	expectRate(t, "the service beside the capped batch pod", service, max(4*batch, 150e6), 0)
	after := classCounters(t, p)
	const be = `gleaner_agent_netqos_sent_bytes_total{class="BE",device="gq0"}`
	if sent := after[be] - before2[be]; sent*8/window.Seconds() < batch*0.8 {
		t.Errorf("class BE's counter on gq0 says %.1f Mbit/s, the peer received %.1f from the batch pod: %v", sent*8/window.Seconds()/1e6, batch/1e6, after)
	}
}
