package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/netnstest"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// nodeState is what Gleaner's agent writes on the node and an uninstall is to give back, read without the agent's
// code: the besteffort QoS cgroup's CPU files, the sysctls system-config changes, the shaped device's root qdisc
// and whether the netqos nftables table exists, and what the agent's state directory holds.
type nodeState struct {
	Files     map[string]string
	RootQdisc string
	NFTables  []string
	StateDir  []string
}

// agentStateDir is the agent's --state-dir on the local node (config/local/agent.yaml).
const agentStateDir = "/var/lib/gleaner-agent"

// readNodeState reads the node's nodeState.
func readNodeState(t *testing.T, host *netlink.Handle) nodeState {
	t.Helper()
	const be = "kubepods/besteffort"
	files := []string{filepath.Join(cgroupDir(t, "cpu", be), "cpu.idle"), "/proc/sys/vm/min_free_kbytes", "/proc/sys/vm/watermark_scale_factor"}
	if cgroupV2(t) {
		files = append(files, filepath.Join(cgroupDir(t, "cpu", be), "cpu.max"), filepath.Join(cgroupDir(t, "cpuset", be), "cpuset.cpus"))
	} else {
		files = append(files, filepath.Join(cgroupDir(t, "cpu", be), "cpu.cfs_quota_us"), filepath.Join(cgroupDir(t, "cpuset", be), "cpuset.cpus"))
	}
	s := nodeState{Files: map[string]string{}, RootQdisc: rootQdisc(host)}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s.Files[f] = strings.TrimSpace(string(b))
	}
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if strings.HasPrefix(tb.Name, "gleaner") {
			s.NFTables = append(s.NFTables, tb.Name)
		}
	}
	entries, err := os.ReadDir(agentStateDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		s.StateDir = append(s.StateDir, e.Name())
	}
	return s
}

// nodeGleanerFields lists what Gleaner's manager and webhooks write on the Node object: the batch and mid extended
// resources and the annotations of Gleaner's and Koordinator's prefixes.
func nodeGleanerFields(t *testing.T, e *Env) []string {
	t.Helper()
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for r := range node.Status.Allocatable {
		if strings.HasPrefix(string(r), "kubernetes.io/batch-") || strings.HasPrefix(string(r), "kubernetes.io/mid-") {
			fields = append(fields, "allocatable "+string(r))
		}
	}
	for k := range node.Annotations {
		if strings.Contains(k, "gleaner.sh/") || strings.Contains(k, "koordinator.sh/") {
			fields = append(fields, "annotation "+k)
		}
	}
	slices.Sort(fields)
	return fields
}

// TestUninstallRestoresTheNode: an uninstall gives the node back what Gleaner wrote. The cluster starts without
// Gleaner and the node's state is read; Gleaner is installed (config/local, beside the NodeResourceTopology CRD, on
// which the agent publishes the kubelet's managers) with CPU idle (on by default), CPU suppression by CFS quota,
// system-config's sysctls, network QoS and cpu amplification on, until each is seen on the node and the manager
// publishes batch-cpu. The uninstall is the documented one: config/local/uninstall's give-back Job first (the chart's
// pre-delete hook), which turns colocation off and waits until the manager has taken the batch and mid resources,
// the ratios and the raw allocatable off the Node, then `kubectl delete -k config/local`. Once the agent has gone,
// the node's state and the manager's part of the Node object are what they were before the install; what the agent's
// topology reporter wrote on the Node stays, as docs/operations.md says, and is logged. The next test gets the
// cluster from config/local again.
func TestUninstallRestoresTheNode(t *testing.T) {
	e := suite.Env(t)
	host := netnstest.Handle(t, netns.None())
	if old, err := host.LinkByName(netQOSDevice); err == nil { // left by a run that was killed
		_ = host.LinkDel(old)
	}
	peer := netnstest.New(t)
	netnstest.Veth(t, host, netQOSDevice, "eth0", peer)
	t.Cleanup(func() {
		if link, err := host.LinkByName(netQOSDevice); err == nil {
			_ = host.LinkDel(link)
		}
	})
	netnstest.Up(t, host, netQOSDevice, netHostAddr+"/24")

	// Registered first: a failed stop below still ends with the suite's cluster back for the next test.
	t.Cleanup(func() {
		if err := e.Suite.StopCluster(context.Background()); err != nil {
			t.Errorf("down after the uninstall: %v", err)
		}
		e.Suite.StartClusterLater()
	})
	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Suite.StartClusterDeploying(context.Background(), func(context.Context, *localcluster.Cluster) error { return nil }); err != nil {
		t.Fatalf("starting the cluster without Gleaner: %v", err)
	}
	e = suite.Env(t)
	// A node that never ran Gleaner: what agents of the suite's earlier clusters kept (stopped, not uninstalled) goes.
	// The directory's entries, not the directory: on the cgroup v2 node it is a mount point (the machine's tmpfs).
	entries, err := os.ReadDir(agentStateDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, en := range entries {
		if err := os.RemoveAll(filepath.Join(agentStateDir, en.Name())); err != nil {
			t.Fatal(err)
		}
	}
	before := readNodeState(t, host)
	nodeBefore := nodeGleanerFields(t, e)
	rawCPU := allocatableCPU(t, e)
	t.Logf("before the install: %+v; node %v", before, nodeBefore)
	t.Cleanup(func() { putSysctlsBack(t, before) })

	installTopologyCRD(t, e)
	local := filepath.Join(e.Suite.RepoRoot, "config", "local")
	if err := e.Cluster.Apply(e.Ctx, local); err != nil {
		t.Fatal(err)
	}
	if err := e.Cluster.WaitWorkloadsReady(e.Ctx, GleanerNamespace, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	dumpOnFailure(t, e)
	expectKubeletManagersPublished(t, e)
	bePod := e.RunPod(testutil.Pod("uninstall-be").Container("c").Image(PauseImage).Obj())
	turnFeaturesOn(e)
	changeSLOConfig(e, "resource-amplification-config", `{"enable": true, "resourceAmplificationRatio": {"cpu": 2}}`,
		func(*slov1alpha1.NodeSLOSpec) (bool, string) { return true, "" })
	waitAllocatableCPU(e, 2*rawCPU, "amplified 2x")
	during := waitWritten(t, e, host, before)
	t.Logf("installed, every feature written: %+v", during)
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		left := managerFields(t, e)
		return slices.Contains(left, "allocatable kubernetes.io/batch-cpu"), fmt.Sprintf("the manager's fields on the Node: %v", left)
	})
	e.DeletePod(bePod)

	start := time.Now()
	giveBack(t, e)
	t.Logf("given back in %s", time.Since(start).Round(time.Second))
	if left := managerFields(t, e); len(left) > 0 {
		t.Errorf("the give-back Job succeeded, and the Node still holds %v", left)
	}
	if _, err := e.Cluster.Kubectl(e.Ctx, "delete", "-k", local, "--wait=true", "--timeout=3m"); err != nil {
		t.Fatalf("uninstalling: %v", err)
	}
	if _, err := e.Cluster.Kubectl(e.Ctx, "delete", "-k", filepath.Join(local, "uninstall"), "--ignore-not-found", "--wait=true", "--timeout=1m"); err != nil {
		t.Errorf("deleting the give-back's objects: %v", err)
	}
	waitNoPods(e, GleanerNamespace)
	after := readNodeState(t, host)
	t.Logf("uninstalled in %s: %+v", time.Since(start).Round(time.Second), after)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the node after the uninstall differs from before the install (-before +after):\n%s", diff)
	}
	if left := managerFields(t, e); len(left) > 0 {
		t.Errorf("the manager's fields on the Node after the uninstall: %v", left)
	}
	if got := allocatableCPU(t, e); got != rawCPU {
		t.Errorf("allocatable cpu after the uninstall: %dm, before the install %dm", got, rawCPU)
	}
	nodeAfter := nodeGleanerFields(t, e)
	if left := slices.DeleteFunc(slices.Clone(nodeAfter), func(f string) bool { return slices.Contains(nodeBefore, f) }); len(left) > 0 {
		t.Logf("left on the Node object by the agent's topology reporter (owned by the Node, they stay: docs/operations.md#uninstalling): %v", left)
	}
}

// managerFields is manager.LeftOnNode of the local node: what the manager and its node webhook wrote on it.
func managerFields(t *testing.T, e *Env) []string {
	t.Helper()
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return manager.LeftOnNode(node)
}

// allocatableCPU is the local node's allocatable cpu in millicores.
func allocatableCPU(t *testing.T, e *Env) int64 {
	t.Helper()
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node.Status.Allocatable.Cpu().MilliValue()
}

// giveBack runs an uninstall's first step as docs/operations.md has it for kustomize: config/local/uninstall's Job,
// until it has succeeded; a failed Job fails the test with its log.
func giveBack(t *testing.T, e *Env) {
	t.Helper()
	if err := e.Cluster.Apply(e.Ctx, filepath.Join(e.Suite.RepoRoot, "config", "local", "uninstall")); err != nil {
		t.Fatal(err)
	}
	e.Eventually(3*time.Minute, func(ctx context.Context) (bool, string) {
		job, err := e.Clientset.BatchV1().Jobs(GleanerNamespace).Get(ctx, "gleaner-give-back", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if job.Status.Failed > 0 {
			logs, _ := e.Cluster.Kubectl(ctx, "-n", GleanerNamespace, "logs", "job/gleaner-give-back")
			t.Fatalf("the give-back Job failed:\n%s", logs)
		}
		return job.Status.Succeeded > 0, fmt.Sprintf("give-back Job: %d active, %d succeeded", job.Status.Active, job.Status.Succeeded)
	})
}

// turnFeaturesOn turns on, besides CPU idle (on by default), CPU suppression by CFS quota, system-config's sysctls
// and network QoS, without putting the ConfigMap back: the uninstall removes it.
func turnFeaturesOn(e *Env) {
	e.t.Helper()
	changeSLOConfig(e, "resource-threshold-config", `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 30, "cpuSuppressPolicy": "cfsQuota"}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.ResourceUsedThresholdWithBE
			return s != nil && s.Enable != nil && *s.Enable, fmt.Sprintf("NodeSLO resourceUsedThresholdWithBE %+v", s)
		})
	changeSLOConfig(e, "system-config", `{"clusterStrategy": {"enable": true, "minFreeKbytesFactor": 150, "watermarkScaleFactor": 200, "totalNetworkBandwidth": "1G"}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.SystemStrategy
			return s != nil && s.Enable != nil && *s.Enable, fmt.Sprintf("NodeSLO systemStrategy %+v", s)
		})
	changeSLOConfig(e, "resource-qos-config", `{"clusterStrategy": {"beClass": {"networkQOS": {"enable": true, "egressLimit": "50M"}}, "lsClass": {"networkQOS": {"enable": true}}}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.ResourceQOSStrategy
			ok := s != nil && s.BEClass != nil && s.BEClass.NetworkQOS != nil && s.BEClass.NetworkQOS.Enable != nil && *s.BEClass.NetworkQOS.Enable
			return ok, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", s)
		})
}

// waitWritten waits until the agent has moved every item of the node's state from before (but the cpuset, which
// stays whole under suppression by CFS quota), so that "as before" after the uninstall is a restoration, and returns
// the state then.
func waitWritten(t *testing.T, e *Env, host *netlink.Handle, before nodeState) nodeState {
	t.Helper()
	var during nodeState
	e.Eventually(3*time.Minute, func(context.Context) (bool, string) {
		during = readNodeState(t, host)
		var same []string
		for f, v := range before.Files {
			if during.Files[f] == v && !strings.HasSuffix(f, "cpuset.cpus") {
				same = append(same, f)
			}
		}
		if during.RootQdisc == before.RootQdisc {
			same = append(same, "the root qdisc")
		}
		if len(during.NFTables) == 0 {
			same = append(same, "no nftables table")
		}
		slices.Sort(same)
		return len(same) == 0, fmt.Sprintf("not yet written by the agent: %v (%+v)", same, during)
	})
	return during
}

// putSysctlsBack writes the sysctls of s back where a failed test left them changed.
func putSysctlsBack(t *testing.T, s nodeState) {
	for f, v := range s.Files {
		if !strings.HasPrefix(f, "/proc/sys/") {
			continue
		}
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != v {
			t.Errorf("%s is %s after the test, %s before: writing it back", f, strings.TrimSpace(string(b)), v)
			_ = os.WriteFile(f, []byte(v), 0o644)
		}
	}
}
