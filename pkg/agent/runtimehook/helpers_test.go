package runtimehook

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The pods the tests use, with the cgroup directories the kubelet (cgroupfs driver) gives them.
const (
	batchUID = "11111111-1111-1111-1111-111111111111"
	lsUID    = "22222222-2222-2222-2222-222222222222"
	beUID    = "33333333-3333-3333-3333-333333333333"

	batchDir = "kubepods/besteffort/pod" + batchUID
	lsDir    = "kubepods/burstable/pod" + lsUID
	beDir    = "kubepods/besteffort/pod" + beUID

	// unlimitedMemory is memory.limit_in_bytes without a limit on cgroup v1.
	unlimitedMemory = "9223372036854771712"
)

// batchPod asks for batch-cpu 2000 and batch-memory 4Gi in container "main": shares 2048, quota 200 ms, 4 GiB.
func batchPod() *corev1.Pod {
	return testutil.Pod("batch").Namespace("jobs").UID(batchUID).Priority(5000).
		Container("main").Requests("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Limits("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Obj()
}

// lsPod is a Burstable service.
func lsPod() *corev1.Pod {
	return testutil.Pod("web").Namespace("prod").UID(lsUID).Container("main").Requests("cpu", "500m", "memory", "256Mi").Limits("cpu", "1", "memory", "256Mi").Obj()
}

// bePod is a best-effort pod without tier resources.
func bePod() *corev1.Pod {
	return testutil.Pod("scratch").Namespace("jobs").UID(beUID).Priority(5000).Container("main").Obj()
}

// newTree writes a cgroup v1 tree (cgroupfs driver) with the QoS cgroups and the pods' cgroups, each holding the
// kubelet's values for a BestEffort pod: no quota, 2 shares, CPUs 0-3, no memory limit. dirs adds more cgroups.
func newTree(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.shares": "2",
		"cpuset/cpuset.cpus": "0-3", "cpuset/cpuset.effective_cpus": "0-3", "memory/memory.limit_in_bytes": unlimitedMemory,
	}
	all := append([]string{"kubepods", "kubepods/besteffort", "kubepods/burstable", batchDir, lsDir, beDir}, dirs...)
	for _, dir := range all {
		for f, v := range files {
			writeFile(t, root, f, dir, v)
		}
	}
	return root
}

// writeFile writes the cgroup file f ("cpu/cpu.shares") of dir under root.
func writeFile(t *testing.T, root, f, dir, v string) {
	t.Helper()
	sub, name := path.Split(f)
	p := filepath.Join(root, sub, dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFile reads the cgroup file f of dir under root.
func readFile(t *testing.T, root, f, dir string) string {
	t.Helper()
	sub, name := path.Split(f)
	b, err := os.ReadFile(filepath.Join(root, sub, dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// cgroupFiles are the files the hook writes, as the kernel shows them.
type cgroupFiles struct{ Shares, Quota, Period, Memory string }

func readFiles(t *testing.T, root, dir string) cgroupFiles {
	t.Helper()
	return cgroupFiles{
		Shares: readFile(t, root, "cpu/cpu.shares", dir), Quota: readFile(t, root, "cpu/cpu.cfs_quota_us", dir),
		Period: readFile(t, root, "cpu/cpu.cfs_period_us", dir), Memory: readFile(t, root, "memory/memory.limit_in_bytes", dir),
	}
}

// kubeletBestEffort are the files of a BestEffort pod's cgroup as the kubelet leaves them.
var kubeletBestEffort = cgroupFiles{Shares: "2", Quota: "-1", Period: "100000", Memory: unlimitedMemory}

// fixture is a hook's dependencies on a fixture tree, with pods in a states store. Each container cgroup that
// addCgroup makes holds one process, whose /proc/PID/oom_score_adj is under host.
type fixture struct {
	root  string
	host  string
	store *statesinformer.Store
	reg   *prometheus.Registry
	deps  Deps
	pids  map[string]int // container cgroup -> its process
}

func newFixture(t *testing.T, clk clock.WithTicker, pods ...*corev1.Pod) *fixture {
	t.Helper()
	root := newTree(t)
	store := statesinformer.NewStore()
	for _, p := range pods {
		store.SetPod(p)
	}
	store.SetNode(testutil.Node("node-a").Capacity("memory", "8Gi").Obj())
	reg := prometheus.NewRegistry()
	fs := cgroup.NewFS(root, cgroup.V1)
	host := t.TempDir()
	opts := executor.DefaultOptions()
	opts.Host = system.NewHostFS(host)
	exec, err := executor.New(fs, clk, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{root: root, host: host, store: store, reg: reg, pids: map[string]int{}, deps: Deps{
		States: store, Executor: exec, Cgroups: fs, Layout: cgroup.Layout{Driver: cgroup.Cgroupfs}, CgroupVersion: cgroup.V1, Clock: clk,
	}}
}

// oomScore is the oom_score_adj of the process in container cgroup dir (one addCgroup made).
func (f *fixture) oomScore(t *testing.T, dir string) string {
	t.Helper()
	pid, ok := f.pids[dir]
	if !ok {
		t.Fatalf("no process in %s", dir)
	}
	b, err := os.ReadFile(filepath.Join(f.host, "proc", strconv.Itoa(pid), "oom_score_adj"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (f *fixture) status(t *testing.T, configured Mode) *Status {
	t.Helper()
	st, err := NewStatus(string(configured), "/test/nri.sock", f.reg, f.deps.Clock)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// addCgroup creates dir in f's tree with the kubelet's BestEffort values.
func (f *fixture) addCgroup(t *testing.T, dir string) {
	t.Helper()
	for file, v := range map[string]string{
		"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.shares": "2",
		"cpuset/cpuset.cpus": "0-3", "cpuset/cpuset.effective_cpus": "0-3", "memory/memory.limit_in_bytes": unlimitedMemory,
	} {
		writeFile(t, f.root, file, dir, v)
	}
	// One process, with oom_score_adj 0 (not a value of any class, so that a write shows).
	pid := 1000 + len(f.pids)
	f.pids[dir] = pid
	writeFile(t, f.root, "memory/cgroup.procs", dir, strconv.Itoa(pid)+"\n")
	writeFile(t, f.host, "proc/oom_score_adj", strconv.Itoa(pid), "0\n")
}

// registry builds the hook's features on f's dependencies.
func (f *fixture) registry(t *testing.T) *Registry {
	t.Helper()
	return newRegistry(t, f.deps)
}

func newRegistry(t *testing.T, d Deps) *Registry {
	t.Helper()
	r, err := NewRegistry(d, Features())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
