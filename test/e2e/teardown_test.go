package e2e

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// Tearing the cluster down, with pods running, leaves the machine as it was before the suite started it: no
// process, mount, kubepods cgroup, network interface or host path of the cluster, ip_forward as it was, and only
// the logs in the state directory. The cluster is started again afterwards for the tests that follow.
func TestTeardownLeavesNothingBehind(t *testing.T) {
	e := suite.Env(t)
	e.RunPod(testutil.Pod("before-teardown").Container("c").Image(PauseImage).Requests("cpu", "100m").Obj())
	during := TakeSnapshot(e.Suite.StateDir)
	if len(during.Processes) == 0 || len(during.Mounts) == 0 || len(during.Cgroups) == 0 {
		t.Fatalf("the snapshot sees nothing of the running cluster, so it could not see leftovers either:\n%s", during)
	}

	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Errorf("down: %v", err)
	}
	after := TakeSnapshot(e.Suite.StateDir)
	want := e.Suite.Before
	// The state directory keeps its logs and its lock file, whatever it held before.
	want.StateDir = []string{"lock", "logs"}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("after down, the machine differs from before up (-before +after):\n%s", diff)
	}

	if err := e.Suite.StartCluster(context.Background()); err != nil {
		t.Fatalf("starting the cluster again after down: %v", err)
	}
	if !slices.Contains(TakeSnapshot(e.Suite.StateDir).StateDir, "cluster.json") {
		t.Error("no cluster.json after starting again")
	}
}
