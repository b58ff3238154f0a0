package e2e

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// Tearing the cluster down, with pods running, leaves the machine as it was before the suite started it: no
// process, mount, kubepods cgroup, network interface or host path of the cluster, ip_forward and the firewall's
// ruleset as they were, and only the logs in the state directory. The cluster is started again afterwards for the
// tests that follow.
func TestTeardownLeavesNothingBehind(t *testing.T) {
	e := suite.Env(t)
	runPodAndSnapshot(t, e)
	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Errorf("down: %v", err)
	}
	expectMachineAsBefore(t, e)
	restart(t, e)
}

// After a crash — the API server, the kubelet and containerd killed, so no pod can be stopped the ordinary way —
// down still finds the containers, shims, mounts and cgroups and removes them.
func TestTeardownAfterACrash(t *testing.T) {
	e := suite.Env(t)
	runPodAndSnapshot(t, e)
	st, err := e.Cluster.Status()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Components {
		if slices.Contains([]string{"kube-apiserver", "kubelet", "containerd"}, c.Name) {
			if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil {
				t.Fatalf("killing %s: %v", c.Name, err)
			}
		}
	}
	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Errorf("down after a crash: %v", err)
	}
	expectMachineAsBefore(t, e)
	restart(t, e)
}

// runPodAndSnapshot runs a pod, so that there are containers, shims, a network namespace, a veth and mounts, and
// checks that the snapshot sees the running cluster (or it could not see leftovers either).
func runPodAndSnapshot(t *testing.T, e *Env) {
	t.Helper()
	e.RunPod(testutil.Pod("before-teardown").Container("c").Image(PauseImage).Requests("cpu", "100m").Obj())
	during := TakeSnapshot(e.Suite.StateDir)
	if len(during.Processes) == 0 || len(during.Mounts) == 0 || len(during.Cgroups) == 0 || len(during.Interfaces) == 0 {
		t.Fatalf("the snapshot does not see the running cluster:\n%s", during)
	}
	// A machine without iptables-save and nft would compare two empty rulesets (make host-packages installs iptables).
	if slices.ContainsFunc(during.Firewall, func(l string) bool { return strings.HasPrefix(l, noFirewallTool+": ") }) {
		t.Fatalf("the snapshot cannot read the firewall: %q", during.Firewall)
	}
	// Not only removed by down: no component adds a rule while the cluster runs (the kubelet's
	// makeIPTablesUtilChains is off, the bridge does not masquerade, there is no kube-proxy).
	if diff := cmp.Diff(e.Suite.Before.Firewall, during.Firewall); diff != "" {
		t.Errorf("the running cluster changed the firewall (-before +during):\n%s", diff)
	}
}

func expectMachineAsBefore(t *testing.T, e *Env) {
	t.Helper()
	want := e.Suite.Before
	// The state directory keeps its logs and its lock file, whatever it held before.
	want.StateDir = []string{"lock", "logs"}
	if diff := cmp.Diff(want, TakeSnapshot(e.Suite.StateDir)); diff != "" {
		t.Errorf("after down, the machine differs from before up (-before +after):\n%s", diff)
	}
}

// restart brings the cluster back for the tests that follow.
func restart(t *testing.T, e *Env) {
	t.Helper()
	if err := e.Suite.StartCluster(context.Background()); err != nil {
		t.Fatalf("starting the cluster again after down: %v", err)
	}
	if !slices.Contains(TakeSnapshot(e.Suite.StateDir).StateDir, "cluster.json") {
		t.Error("no cluster.json after starting again")
	}
}
