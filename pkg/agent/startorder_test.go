package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestStartOrderIsDocumented: the agent, with every optional module on, starts its modules in the order
// docs/agent.md's "Start-up order" lists them, by the names they log under. That list is the one description of the
// order (the package documentation points to it), so a module added, dropped or moved fails here until the list
// says so.
func TestStartOrderIsDocumented(t *testing.T) {
	e := env.Start(t)
	const nodeName = "start-order-node"
	host, _, _ := simulatedHost(t, e, nodeName)
	o := NewOptions()
	o.Kubeconfig, o.NodeName = e.Kubeconfig, nodeName
	o.ProcRoot, o.SysRoot, o.CgroupRoot = host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), t.TempDir()
	o.MetricsAddr, o.HealthAddr = freeAddr(t), freeAddr(t)
	o.RuntimeHook.NRISocket = filepath.Join(t.TempDir(), "nri.sock") // never dialled: the agent is built, not run
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(e.Config, o, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range a.runnables {
		got = append(got, r.Name())
	}
	if d := cmp.Diff(documentedStartOrder(t, "../../docs/agent.md"), got); d != "" {
		t.Errorf("the agent's modules differ from docs/agent.md's start-up order (-documented +agent):\n%s", d)
	}
}

// documentedStartOrder returns the module names that begin the numbered items of the "Start-up order" section of
// the file at path, in order: "1. `metrics-server`, `health-server`: ..." gives metrics-server and health-server.
func documentedStartOrder(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Start-up order\n")
	if !ok {
		t.Fatalf("%s has no Start-up order section", path)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	item := regexp.MustCompile("(?m)^[0-9]+\\. ((?:`[a-z-]+`(?:, )?)+):")
	name := regexp.MustCompile("`([a-z-]+)`")
	var names []string
	for _, m := range item.FindAllStringSubmatch(section, -1) {
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			names = append(names, n[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s's Start-up order names no module", path)
	}
	return names
}
