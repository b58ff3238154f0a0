package plugins

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
)

// manager builds every plugin of the registry on a fixture node of cgroup v1, with cpu.idle in its cgroups or not.
func manager(t *testing.T, idleFile bool) (*qosmanager.Manager, *qosmanagertest.Node) {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs})
	if idleFile {
		n.WriteEach("cpu/cpu.idle", "0\n")
	}
	d := n.Deps(time.Second)
	d.Evictor = &qosmanagertest.Evictor{}
	d.Host = system.NewHostFS(filepath.Dir(n.Host.ProcRoot())).Mount("proc", n.Host.ProcRoot()).Mount("sys", n.Host.SysRoot())
	d.StateDir = t.TempDir()
	m, err := qosmanager.NewManager(d, n.Clock, Registry(), []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, n
}

// TestEveryPluginHasACondition: every plugin names a condition of its own and says when the spec turns it on.
func TestEveryPluginHasACondition(t *testing.T) {
	m, _ := manager(t, true)
	if len(m.Names()) != len(Registry()) {
		t.Fatalf("built %v, want every plugin of the registry", m.Names())
	}
	seen := map[string]string{}
	for _, f := range Registry() {
		if f.Condition == "" {
			t.Errorf("plugin %s has no condition", f.Name)
		}
		if other, dup := seen[f.Condition]; dup {
			t.Errorf("plugins %s and %s share the condition %s", other, f.Name, f.Condition)
		}
		seen[f.Condition] = f.Name
	}
}

// TestConditionsOnAFixtureNode: the defaults turn on CPU idle alone, applied where the kernel has cpu.idle and
// Unsupported where it has not; resctrl on a host without it and memory QoS on cgroup v1 are Unsupported, each
// with the reason.
func TestConditionsOnAFixtureNode(t *testing.T) {
	show := func(m *qosmanager.Manager) string {
		conds, _ := m.NodeSLOConditions()
		var s []string
		for _, c := range conds {
			s = append(s, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		return strings.Join(s, "\n")
	}
	m, n := manager(t, true)
	_ = m.RunOnce(n.Ctx)
	if got, want := show(m), "CPUIdle=True/Applied: QoS plugin cpuqos applies it"; got != want {
		t.Errorf("defaults, a kernel with cpu.idle:\n%s\nwant\n%s", got, want)
	}

	m, n = manager(t, false)
	n.Store.SetNodeSLO(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "node", Generation: 2}, Spec: slov1alpha1.NodeSLOSpec{
		ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{BEClass: &slov1alpha1.ResourceQOS{
			ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(true)},
			MemoryQOS:  &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true)},
		}},
	}})
	_ = m.RunOnce(n.Ctx)
	got := show(m)
	for _, want := range []string{
		"Resctrl=False/Unsupported: ",
		"MemoryQOS=False/Unsupported: cgroup v1 has no memory.min",
		"CPUIdle=False/Unsupported: this kernel has no cpu.idle (it needs Linux 5.15 or later)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("resctrl and memory QoS on, a kernel without cpu.idle:\n%s\nwant a line %q", got, want)
		}
	}
	if _, gen := m.NodeSLOConditions(); gen != 2 {
		t.Errorf("generation %d, want 2", gen)
	}
}
