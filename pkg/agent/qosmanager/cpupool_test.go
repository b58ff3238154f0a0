package qosmanager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// poolRig is an 8-CPU simulated node (cgroup v1, cgroupfs).
type poolRig struct {
	*qosmanagertest.Node
	t *testing.T
	d qosmanager.Deps
}

func newPoolRig(t *testing.T) *poolRig {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs, CPUs: 8})
	return &poolRig{Node: n, t: t, d: n.Deps(time.Second)}
}

// addPod creates the pod's cgroups, puts it in the store and gives its container (or init container) container
// the cpuset cpus, as the CPU manager's static policy would; container "" pins nothing.
func (r *poolRig) addPod(pod *corev1.Pod, container, cpus string) {
	r.t.Helper()
	r.AddPod(pod, hostsim.Usage{})
	if container != "" {
		r.pin(pod, container, cpus)
	}
}

func (r *poolRig) pin(pod *corev1.Pod, container, cpus string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.Host.CgroupRoot(), "cpuset", r.dir(pod, container), "cpuset.effective_cpus"), []byte(cpus+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *poolRig) dir(pod *corev1.Pod, container string) string {
	r.t.Helper()
	for _, st := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if st.Name == container {
			dir, err := r.Host.Layout().ContainerDir(r.Host.Layout().PodDir(pod), st.ContainerID)
			if err != nil {
				r.t.Fatal(err)
			}
			return dir
		}
	}
	r.t.Fatalf("pod %s has no running container %s", pod.Name, container)
	return ""
}

// TestCPUPoolWhichPodsCount: the running containers of Guaranteed pods that request whole CPUs and run on fewer
// CPUs than the kubepods cgroup hold them exclusively, whatever the pod's phase; best-effort pods never do.
func TestCPUPoolWhichPodsCount(t *testing.T) {
	r := newPoolRig(t)
	n := 0
	guaranteed := func(name string) *tu.PodBuilder {
		n++
		return tu.Pod(name).UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
	}
	db := guaranteed("db").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "2", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Running("containerd://db").Obj()
	// Pending while its init container runs: that container holds its CPUs all the same.
	initing := guaranteed("in").Phase(corev1.PodPending).
		InitContainer("setup", false).Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://in-setup").
		Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj()
	// A best-effort pod (batch band) of Kubernetes QoS Guaranteed whose cpuset CPU suppression narrowed.
	confined := guaranteed("be").Priority(5500).Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "2", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Running("containerd://be").Obj()
	// A fraction of a CPU: the static policy pins nothing.
	fraction := guaranteed("fr").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "1500m", "memory", "1Gi").Limits("cpu", "1500m", "memory", "1Gi").Running("containerd://fr").Obj()
	// Whole CPUs, but the cpuset of the whole node: not pinned (the CPU manager's none policy).
	unpinned := guaranteed("un").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://un").Obj()
	r.addPod(db, "c", "6-7")
	r.addPod(initing, "setup", "5")
	r.addPod(confined, "c", "0-1")
	r.addPod(fraction, "c", "2")
	r.addPod(unpinned, "c", "0-7")

	var pool qosmanager.CPUPool
	if err := pool.Update(r.d, r.Store.GetAllPods()); err != nil {
		t.Fatal(err)
	}
	if want := cpuset.New(0, 1, 2, 3, 4, 5, 6, 7); !pool.Universe.Equals(want) {
		t.Errorf("Universe = %s, want %s", pool.Universe, want)
	}
	if want := cpuset.New(5, 6, 7); !pool.Exclusive.Equals(want) {
		t.Errorf("Exclusive = %s, want %s: db's 6-7 and the init container's 5, not the best-effort pod's 0-1", pool.Exclusive, want)
	}
	if want := cpuset.New(0, 1, 2, 3, 4); !pool.Shared().Equals(want) {
		t.Errorf("Shared = %s, want %s", pool.Shared(), want)
	}
	want := map[string]metriccache.Key{
		r.dir(db, "c"):          metriccache.ContainerKey(metriccache.ContainerCPUUsage, string(db.UID), "c"),
		r.dir(initing, "setup"): metriccache.ContainerKey(metriccache.ContainerCPUUsage, string(initing.UID), "setup"),
	}
	if diff := cmp.Diff(want, pool.Pinned); diff != "" {
		t.Errorf("Pinned (-want +got):\n%s", diff)
	}
}

// TestCPUPoolUpdate: Update reads again when the pods that count change or CPUPoolRefresh passed, not otherwise;
// Refresh reads at once.
func TestCPUPoolUpdate(t *testing.T) {
	r := newPoolRig(t)
	db := tu.Pod("db").UID("00000000-0000-4000-8000-00000000000d").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "2", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Running("containerd://db").Obj()
	r.addPod(db, "c", "6-7")
	var pool qosmanager.CPUPool
	update := func(want cpuset.CPUSet, why string) {
		t.Helper()
		if err := pool.Update(r.d, r.Store.GetAllPods()); err != nil {
			t.Fatal(err)
		}
		if !pool.Exclusive.Equals(want) {
			t.Errorf("%s: Exclusive = %s, want %s", why, pool.Exclusive, want)
		}
	}
	update(cpuset.New(6, 7), "first read")
	r.pin(db, "c", "4-5")
	update(cpuset.New(6, 7), "nothing changed within the refresh period")
	r.Clock.Step(qosmanager.CPUPoolRefresh)
	update(cpuset.New(4, 5), "the refresh period passed")

	// A best-effort pod is no change; a pod that counts is.
	be := tu.Pod("be").UID("00000000-0000-4000-8000-00000000000e").Label(slov1alpha1.LabelQoSClass, "BE").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://be").Obj()
	r.addPod(be, "c", "0")
	r.pin(db, "c", "3-4")
	update(cpuset.New(4, 5), "a best-effort pod came")
	web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000f").Phase(corev1.PodRunning).
		Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://web").Obj()
	r.addPod(web, "c", "7")
	update(cpuset.New(3, 4, 7), "a Guaranteed pod came")

	r.pin(web, "c", "6")
	if err := pool.Refresh(r.d, r.Store.GetAllPods()); err != nil {
		t.Fatal(err)
	}
	if want := cpuset.New(3, 4, 6); !pool.Exclusive.Equals(want) {
		t.Errorf("Refresh: Exclusive = %s, want %s", pool.Exclusive, want)
	}
}

// TestCPUPoolUniverse: without the kubepods cgroup's cpuset, the node's CPUs come from the topology; without that
// too, Update fails and leaves the pool as it was.
func TestCPUPoolUniverse(t *testing.T) {
	r := newPoolRig(t)
	kubepods := filepath.Join(r.Host.CgroupRoot(), "cpuset", r.Host.Layout().Kubepods(), "cpuset.effective_cpus")
	if err := os.WriteFile(kubepods, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var pool qosmanager.CPUPool
	err := pool.Update(r.d, nil)
	if err == nil || !pool.Universe.IsEmpty() {
		t.Fatalf("Update without a cpuset or a topology = %v, universe %s; want an error and nothing", err, pool.Universe)
	}
	r.Cache.SetInfo(metriccache.InfoNodeTopology, &topology.Topology{CPUs: []topology.CPU{{ID: 0}, {ID: 1, Core: 1}}})
	if err := pool.Update(r.d, nil); err != nil {
		t.Fatal(err)
	}
	if want := cpuset.New(0, 1); !pool.Universe.Equals(want) {
		t.Errorf("Universe = %s, want the topology's %s", pool.Universe, want)
	}
}

// TestFingerprint: the order and the boundaries of the strings count.
func TestFingerprint(t *testing.T) {
	f := qosmanager.NewFingerprint()
	if f.Add("ab").Add("c") == f.Add("a").Add("bc") || f.Add("a").Add("b") == f.Add("b").Add("a") || f.Add("") == f {
		t.Error("different sequences of strings have the same fingerprint")
	}
	var twice [2]qosmanager.Fingerprint
	for i := range twice {
		twice[i] = f.Add("a").Add("b")
	}
	if twice[0] != twice[1] {
		t.Error("the same sequence has two fingerprints")
	}
}
