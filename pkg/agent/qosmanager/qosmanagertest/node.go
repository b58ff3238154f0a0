package qosmanagertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/test/hostsim"
)

// Layout is a cgroup version and a kubelet cgroup driver: one of the four trees a kubelet can lay out.
type Layout struct {
	Version cgroup.Version
	Driver  cgroup.Driver
}

func (l Layout) String() string { return fmt.Sprintf("%s-%s", l.Version, l.Driver) }

// Layouts are the four layouts plugin tests run on: cgroup v1 and v2, cgroupfs and systemd drivers.
var Layouts = []Layout{{cgroup.V1, cgroup.Cgroupfs}, {cgroup.V1, cgroup.Systemd}, {cgroup.V2, cgroup.Cgroupfs}, {cgroup.V2, cgroup.Systemd}}

// ForEachLayout runs fn as a subtest, named after the layout, on each of Layouts.
func ForEachLayout(t *testing.T, fn func(t *testing.T, l Layout)) {
	for _, l := range Layouts {
		t.Run(l.String(), func(t *testing.T) { fn(t, l) })
	}
}

// Start is the fake clock's time when a Node is made.
var Start = time.Unix(1_700_000_000, 0)

// Node is a simulated node for a QoS plugin's test: a hostsim host (its cgroup tree, /proc and /sys under a
// temporary directory), the cgroup reader on it and the real executor writing to it, a states store, a metric
// cache, a fake clock, a recorder of events, a stand-in for the NodeMetric reporter and a logger whose lines Log
// records. Deps gives a plugin all of it.
type Node struct {
	T      testing.TB
	Host   *hostsim.Host
	FS     *cgroup.FS
	Proc   *proc.FS
	Clock  *clocktesting.FakeClock
	Store  *statesinformer.Store
	Cache  *metriccache.MemoryCache
	Exec   *executor.Executor
	Events *record.FakeRecorder
	// Pressure stands in for the NodeMetric reporter the plugins publish the node's memory pressure to.
	Pressure *Pressure
	Log      *Log
	// Ctx carries the logger.
	Ctx context.Context
}

// NewNode lays out a node with cfg (cfg.Version and cfg.Driver say which layout) and puts pods on it, running and
// idle.
func NewNode(t testing.TB, cfg hostsim.Config, pods ...*corev1.Pod) *Node {
	t.Helper()
	host, err := hostsim.New(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(Start)
	cache, err := metriccache.New(metriccache.DefaultConfig(), clk)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := proc.New(host.ProcRoot())
	if err != nil {
		t.Fatal(err)
	}
	l := &Log{}
	n := &Node{
		T: t, Host: host, FS: cgroup.NewFS(host.CgroupRoot(), cfg.Version), Proc: pr, Clock: clk,
		Store: statesinformer.NewStore(), Cache: cache, Events: record.NewFakeRecorder(100), Pressure: &Pressure{}, Log: l,
		Ctx: klog.NewContext(context.Background(), l.Logger()),
	}
	n.NewExecutor()
	for _, pod := range pods {
		n.AddPod(pod, hostsim.Usage{})
	}
	return n
}

// NewExecutor replaces Exec with a new executor on the same cgroups: what an agent restart starts with.
func (n *Node) NewExecutor() *executor.Executor {
	n.T.Helper()
	exec, err := executor.New(n.FS, n.Clock, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		n.T.Fatal(err)
	}
	n.Exec = exec
	return exec
}

// Deps are the plugin's dependencies on the node, run every interval; Evictor, Host, StateDir and Registerer are
// left for the test to set.
func (n *Node) Deps(interval time.Duration) qosmanager.Deps {
	return qosmanager.Deps{
		States: n.Store, Cache: n.Cache, Executor: n.Exec, Cgroups: n.FS, Layout: n.Host.Layout(), Proc: n.Proc,
		SysRoot: n.Host.SysRoot(), Events: n.Events, Pressure: n.Pressure, Clock: n.Clock, Interval: interval,
	}
}

// AddPod creates the pod's cgroups (its containers from the container IDs in its status) using u, and puts it in
// the store.
func (n *Node) AddPod(pod *corev1.Pod, u hostsim.Usage) {
	n.T.Helper()
	if err := n.Host.AddPod(pod, u); err != nil {
		n.T.Fatal(err)
	}
	n.Store.SetPod(pod)
}

// WriteEach writes file (relative to each cgroup, "cpu/cpu.idle" on v1) with content in every cgroup of the node.
func (n *Node) WriteEach(file, content string) {
	n.T.Helper()
	if err := n.Host.WriteEach(file, content); err != nil {
		n.T.Fatal(err)
	}
}

// Run runs p once with spec, failing the test on an error.
func (n *Node) Run(p qosmanager.RunPlugin, spec *slov1alpha1.NodeSLOSpec) {
	n.T.Helper()
	if err := p.Run(n.Ctx, spec); err != nil {
		n.T.Fatal(err)
	}
}

// ExpectValidation checks what a plugin's Validate returned: no error when want is empty, else an error that says
// each of want; with oneLineEach, one line for each of them and no more.
func ExpectValidation(t testing.TB, err error, oneLineEach bool, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("refused a valid spec: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want errors %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); oneLineEach && n != len(want) {
		t.Errorf("error has %d lines, want %d: %q", n, len(want), err)
	}
}
