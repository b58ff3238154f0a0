package netqos

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/netnstest"
)

// TestJudge: a window's counters give a verdict only when they are evidence (checkPackets packets at least), a
// quiet window says nothing, and a finding is undone only by its own counter-evidence.
func TestJudge(t *testing.T) {
	devices := []string{"eth0", "flannel.1"}
	tests := []struct {
		name    string
		current verdictKind
		w       window
		known   bool
		kind    verdictKind
		want    string // in the message; "" for none
	}{
		{"quiet", classifies, window{seen: 10, podDevices: 50}, false, classifies, ""},
		{"classified and in the classes", classifies, window{seen: 900, classified: 800, inClasses: 800, podDevices: 900}, true, classifies, ""},
		{"bypassed: the pods' devices took packets, netfilter saw none", classifies,
			window{podDevices: 500, devices: map[string]bool{"cali2": true, "cali1": true}}, true, bypassed, "the pods' own devices (cali1, cali2) took 500 packets"},
		{"too few to say it is bypassed", classifies, window{podDevices: checkPackets - 1}, false, classifies, ""},
		{"classified, lost on the way", classifies, window{seen: 600, classified: 600}, true, classLost, "600 packets of pods in the shaped classes were given their class on their way out through eth0, flannel.1"},
		{"netfilter sees them, none leave (traffic within the node)", classifies, window{seen: 600, podDevices: 600}, true, classifies, ""},
		{"some in the classes is enough", classifies, window{classified: 600, inClasses: 1}, true, classifies, ""},
		{"a bypass undone by pods' packets in netfilter", bypassed, window{seen: 5, podDevices: 40}, true, classifies, ""},
		{"a bypass not undone by packets in the classes alone", bypassed, window{inClasses: 900}, false, classifies, ""},
		{"a lost class not undone by packets seen in netfilter", classLost, window{seen: 900, classified: 100}, false, classifies, ""},
		{"a lost class undone by packets in the classes", classLost, window{seen: 900, classified: 100, inClasses: 3}, true, classifies, ""},
		{"a lost class that is still lost", classLost, window{seen: 700, classified: 700}, true, classLost, "700 packets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := judge(tt.w, 30*time.Second, "eth0", devices, tt.current)
			if known != tt.known || got.kind != tt.kind || (tt.want == "") != (got.message == "") || !strings.Contains(got.message, tt.want) {
				t.Errorf("judge(%+v, %d) = %+v, %v; want %v, kind %d and a message holding %q", tt.w, tt.current, got, known, tt.known, tt.kind, tt.want)
			}
			if got.message != "" && !strings.HasPrefix(got.message, "network QoS cannot classify on this node: ") {
				t.Errorf("verdict %q does not say what it is about first", got.message)
			}
		})
	}
	if d := delta(100, true, 40); d != 40 {
		t.Errorf("a counter that went back (made again) counts from zero: delta = %d, want 40", d)
	}
	if d := delta(0, false, 400); d != 0 {
		t.Errorf("a counter seen for the first time is the baseline: delta = %d, want 0", d)
	}
}

// TestRealKernelClassifyCheck runs the plugin's classify check on testNet with a fake clock, a window at a time,
// with the batch pod sending: first as the test node routes it (classified: no verdict), then with a tc redirect on
// the pod's host-side device that sends its packets straight to gq0's queue, past the node's IP stack and netfilter
// (as an eBPF datapath does: the bypass verdict, and a Warning event on the NodeSLO), then with a rule after the
// plugin's that sets every packet's priority back to 0 (the lost-class verdict), and last as at first (the verdict
// goes).
func TestRealKernelClassifyCheck(t *testing.T) {
	n := newTestNet(t)
	store := statesinformer.NewStore()
	// The batch pod is dual-stack, as pods of a dual-stack cluster are: its two addresses route to its one device,
	// which is still a device of one pod.
	batch := netPod("batch", batchAddr, slov1alpha1.QoSBE)
	batch.Status.PodIPs = append(batch.Status.PodIPs, corev1.PodIP{IP: batchAddr6})
	store.SetPod(batch)
	store.SetPod(netPod("service", serviceAddr, slov1alpha1.QoSLS))
	routeTo(t, n.nodeNL, "gqb", batchAddr6+"/128")
	store.SetNodeSLO(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "node"}})
	clk := clocktesting.NewFakeClock(time.Now())
	events := record.NewFakeRecorder(10)
	p, err := newIn(qosmanager.Deps{Clock: clk, Events: events, States: store, NetDevice: "gq0"}, n.node)
	if err != nil {
		t.Fatal(err)
	}
	spec := netSpec("50M")
	runPlugin(t, p, spec) // the first sample: the first window begins
	// window sends count datagrams from the batch pod, then runs the plugin through one window, and returns its
	// verdict.
	window := func(what string, count int) string {
		t.Helper()
		sendUDP(t, n.batch, fmt.Sprintf("%s:%d", peerAddr, batchPort), count)
		for range checkWindow / checkEvery {
			clk.Step(checkEvery)
			runPlugin(t, p, spec)
		}
		t.Logf("%s: %q", what, p.Unsupported())
		return p.Unsupported()
	}

	if v := window("routed through the node", 1000); v != "" {
		t.Fatalf("routed through the node and classified, the check says: %s", v)
	}

	gqb, err := n.nodeNL.LinkByName("gqb")
	if err != nil {
		t.Fatal(err)
	}
	gq0, err := n.nodeNL.LinkByName("gq0")
	if err != nil {
		t.Fatal(err)
	}
	ingress := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: gqb.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_INGRESS}}
	if err := n.nodeNL.QdiscAdd(ingress); err != nil {
		t.Fatalf("adding an ingress qdisc to gqb: %v", err)
	}
	redirect := &netlink.U32{FilterAttrs: netlink.FilterAttrs{LinkIndex: gqb.Attrs().Index, Parent: netlink.MakeHandle(0xffff, 0),
		Priority: 1, Protocol: unix.ETH_P_IP}, RedirIndex: gq0.Attrs().Index} // IPv4 only: ARP still answers
	if err := n.nodeNL.FilterAdd(redirect); err != nil {
		t.Fatalf("redirecting gqb's IPv4 packets to gq0: %v", err)
	}
	v := window("past netfilter", 1000)
	// The service's device may be named too: its namespace sends a few IPv6 neighbour and router messages of its own.
	if !strings.HasPrefix(v, "network QoS cannot classify on this node: the pods' own devices (gqb") || !strings.Contains(v, "past netfilter") {
		t.Errorf("with the batch pod's packets moved past netfilter, the verdict is %q, want one naming gqb and netfilter", v)
	}
	select {
	case e := <-events.Events:
		if !strings.Contains(e, ReasonCannotClassify) || !strings.Contains(e, "gqb") {
			t.Errorf("event %q, want a %s Warning naming gqb", e, ReasonCannotClassify)
		}
	default:
		t.Errorf("no event on the NodeSLO for the verdict")
	}
	// The same finding in the next window, with other counts: the verdict's message stays the first window's (the
	// NodeSLO is not written again with new counts), and no second event.
	if again := window("past netfilter, a second window", 600); again != v {
		t.Errorf("the same finding renewed the verdict: %q, then %q", v, again)
	}
	select {
	case e := <-events.Events:
		t.Errorf("a second event for the same finding: %q", e)
	default:
	}
	if err := n.nodeNL.QdiscDel(ingress); err != nil {
		t.Fatal(err)
	}

	netnstest.Reprioritize(t, n.node, "test-reprioritize", "")
	v = window("priority set again after the plugin's rules", 1000)
	if !strings.Contains(v, "were given their class on their way out through gq0 in the last 30s and none arrived in those classes on gq0") {
		t.Errorf("with the priority set back to 0 after the plugin's rules, the verdict is %q", v)
	}
	netnstest.DeleteTable(t, n.node, "test-reprioritize")

	if v := window("routed through the node again", 1000); v != "" {
		t.Errorf("classified again, the verdict stays: %s", v)
	}
}

// batchAddr6 is the batch pod's IPv6 address in the classify check's test: a route on the node, no packets.
const batchAddr6 = "fd00:9::2"

// routeTo routes dst to the device named dev in the namespace of nl.
func routeTo(t *testing.T, nl *netlink.Handle, dev, dst string) {
	t.Helper()
	link, err := nl.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	_, ipnet, err := net.ParseCIDR(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := nl.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipnet}); err != nil {
		t.Fatalf("routing %s to %s: %v", dst, dev, err)
	}
}

// sendUDP sends count datagrams of 200 bytes to addr from inside ns.
func sendUDP(t *testing.T, ns netns.NsHandle, addr string, count int) {
	t.Helper()
	err := netnstest.Do(ns, func() error {
		c, err := net.Dial("udp4", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 200)
		for range count {
			if _, err := c.Write(buf); err != nil && !isRefused(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sending UDP to %s: %v", addr, err)
	}
}

// isRefused: the peer's ICMP port unreachable for an earlier datagram, reported on a later write.
func isRefused(err error) bool { return strings.Contains(err.Error(), "connection refused") }
