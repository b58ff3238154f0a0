package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/netqos"
	"github.com/gleaner-sh/gleaner/test/netnstest"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// NetSendImage is the image of test/workloads/netsend, which streams to a TCP address as fast as it can.
const NetSendImage = "gleaner.local/netsend:dev"

// Network QoS on the local node (docs/qos.md, "Network QoS"). The local overlay's agent shapes netQOSDevice
// (--net-qos-device in config/local/agent.yaml), the host's end of a veth to a peer's network namespace that the
// test makes: a destination outside the node, reached through the host's routing as a pod's traffic to another
// machine is, without touching this machine's own uplink.
const (
	netQOSDevice = "gleaner-peer0"
	netHostAddr  = "198.51.100.1" // TEST-NET-2, RFC 5737
	netPeerAddr  = "198.51.100.2"
)

// TestNetworkQoSCapsBatchEgress runs a batch pod and a service pod that both stream to the peer as fast as they
// can; with beClass.networkQOS's egressLimit at 50M the batch pod's traffic holds at 50 Mbit/s while the service's
// is many times that, and once the key is gone the plugin's qdisc goes and the batch pod is fast again.
func TestNetworkQoSCapsBatchEgress(t *testing.T) {
	e := suite.Env(t)
	peer := netnstest.New(t)
	host := netnstest.Handle(t, netns.None())
	if old, err := host.LinkByName(netQOSDevice); err == nil { // left by a run that was killed
		_ = host.LinkDel(old)
	}
	netnstest.Veth(t, host, netQOSDevice, "eth0", peer)
	t.Cleanup(func() {
		if link, err := host.LinkByName(netQOSDevice); err == nil {
			if err := host.LinkDel(link); err != nil {
				t.Errorf("removing %s: %v", netQOSDevice, err)
			}
		}
	})
	netnstest.Up(t, host, netQOSDevice, netHostAddr+"/24")
	peerNL := netnstest.Handle(t, peer)
	netnstest.Up(t, peerNL, "eth0", netPeerAddr+"/24")
	netnstest.Up(t, peerNL, "lo", "")
	netnstest.Route(t, peerNL, "eth0", localcluster.PodCIDR, netHostAddr)
	forwarding(t)

	const batchPort, servicePort = 5001, 5002
	r := netnstest.Listen(t, peer, netPeerAddr, batchPort, servicePort)
	to := func(port int) string { return fmt.Sprintf("--to=%s:%d", netPeerAddr, port) }
	// No requests: Kubernetes BestEffort, Gleaner's BE class. The service requests CPU: Burstable, class LS.
	e.RunPod(testutil.Pod("net-batch").Container("c").Image(NetSendImage, to(batchPort)).Obj())
	e.RunPod(testutil.Pod("net-service").Container("c").Image(NetSendImage, to(servicePort)).Requests("cpu", "100m").Obj())
	const window = 3 * time.Second
	rates := func() (batch, service float64) {
		got := r.Rates(window, batchPort, servicePort)
		return got[0], got[1]
	}
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		batch, service := rates()
		msg := fmt.Sprintf("unshaped: batch %.0f Mbit/s, service %.0f Mbit/s (want both above 200)", batch/1e6, service/1e6)
		if batch > 200e6 && service > 200e6 {
			t.Log(msg)
			return true, ""
		}
		return false, msg
	})

	setSLOConfig(e, "system-config", `{"clusterStrategy": {"totalNetworkBandwidth": "1G"}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.SystemStrategy
			return s != nil && s.TotalNetworkBandwidth != nil, fmt.Sprintf("NodeSLO systemStrategy %+v", s)
		})
	setSLOConfig(e, "resource-qos-config", `{"clusterStrategy": {
		"beClass": {"networkQOS": {"enable": true, "egressLimit": "50M"}},
		"lsClass": {"networkQOS": {"enable": true}}}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.ResourceQOSStrategy
			ok := s != nil && s.BEClass != nil && s.BEClass.NetworkQOS != nil && s.BEClass.NetworkQOS.Enable != nil &&
				*s.BEClass.NetworkQOS.Enable
			return ok, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", s)
		})
	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		batch, service := rates()
		return batch < 50e6*1.3 && batch > 50e6*0.5 && service > max(4*batch, 150e6),
			fmt.Sprintf("beClass egressLimit 50M: batch %.1f Mbit/s (want 25..65), service %.0f Mbit/s (want 4x the batch pod's, and 150 at least); %s",
				batch/1e6, service/1e6, rootQdisc(host))
	})
	batch, service := rates()
	t.Logf("beClass egressLimit 50M: batch %.1f Mbit/s, service %.0f Mbit/s; %s", batch/1e6, service/1e6, rootQdisc(host))
	cannotClassify(e, rates)

	setSLOConfig(e, "resource-qos-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		s := spec.ResourceQOSStrategy
		return s == nil || s.BEClass == nil || s.BEClass.NetworkQOS == nil, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", s)
	})
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		batch, _ := rates()
		q := rootQdisc(host)
		msg := fmt.Sprintf("turned off: batch %.0f Mbit/s (want above 150); %s", batch/1e6, q)
		if batch > 150e6 && !strings.HasPrefix(q, "htb 474c:") {
			t.Log(msg)
			return true, ""
		}
		return false, msg
	})
}

// cannotClassify: the plugin's classify check (docs/qos.md, "When pods' packets cannot be classified") on the
// local node, where the pods' packets reach their classes, then on a node where they cannot. First the NetworkQOS
// condition is Applied; then a table after Gleaner's hook sets the priority of every packet leaving through the
// shaped device back to 0, as a datapath that handles pods' packets itself would, and the batch pod is no longer
// capped: within two of the check's windows the condition is False, saying the node cannot classify, with a
// Warning event on the NodeSLO.
func cannotClassify(e *Env, rates func() (batch, service float64)) {
	t := e.t
	t.Helper()
	waitNodeSLOStatus(e, "NetworkQOS applied", func(slo *slov1alpha1.NodeSLO) bool {
		return hasCondition(slo, slov1alpha1.NodeSLONetworkQOS, metav1.ConditionTrue, slov1alpha1.NodeSLOReasonApplied)
	})
	const table = "gleaner-e2e-reprioritize"
	netnstest.Reprioritize(t, netns.None(), table, netQOSDevice)
	slo := waitNodeSLOStatusFor(e, 2*time.Minute, "NetworkQOS False: cannot classify", func(slo *slov1alpha1.NodeSLO) bool {
		return hasCondition(slo, slov1alpha1.NodeSLONetworkQOS, metav1.ConditionFalse, slov1alpha1.NodeSLOReasonUnsupported,
			"network QoS cannot classify on this node", netQOSDevice)
	})
	batch, _ := rates()
	t.Logf("with the priority set back after the hook: batch %.0f Mbit/s; %s", batch/1e6, conditionsText(slo))
	if batch < 150e6 {
		t.Errorf("with its packets' class lost the batch pod is still held back: %.0f Mbit/s, want above 150 (the condition's claim)", batch/1e6)
	}
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		list, err := e.Clientset.CoreV1().Events("").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=NodeSLO,involvedObject.uid=" + string(slo.UID) + ",reason=" + netqos.ReasonCannotClassify})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) > 0, "no " + netqos.ReasonCannotClassify + " event on this NodeSLO"
	})
	netnstest.DeleteTable(t, netns.None(), table)
}

// rootQdisc says what the shaped device's root qdisc is: "htb 474c:0" when it is the plugin's.
func rootQdisc(h *netlink.Handle) string {
	link, err := h.LinkByName(netQOSDevice)
	if err != nil {
		return err.Error()
	}
	qs, err := h.QdiscList(link)
	if err != nil {
		return err.Error()
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q.Type() + " " + netlink.HandleStr(q.Attrs().Handle)
		}
	}
	return "no root qdisc"
}

// forwarding turns IPv4 forwarding on for the test if the CNI plugin has not already (a pod's packets to the peer
// are forwarded from the bridge to the veth), and puts the old value back after.
func forwarding(t *testing.T) {
	t.Helper()
	const file = "/proc/sys/net/ipv4/ip_forward"
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(old) == "1\n" {
		return
	}
	if err := os.WriteFile(file, []byte("1"), 0o644); err != nil {
		t.Fatalf("turning IPv4 forwarding on: %v", err)
	}
	t.Cleanup(func() { _ = os.WriteFile(file, old, 0o644) })
}
