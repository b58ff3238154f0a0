package cpusuppress

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// beView is where the confined pods' cgroups are (see confinedPod), rebuilt only when those pods or their running
// containers change. Pods not running yet are listed too: a cgroup created before suppression started would
// otherwise keep its wider cpuset and make the kernel refuse the besteffort cgroup's narrower one.
type beView struct {
	key   qosmanager.Fingerprint
	built bool
	// confined are the cgroups the cpuset policy confines: the besteffort QoS cgroup and the pod cgroups of
	// best-effort pods outside it (a pod of Gleaner QoS class BE that requests CPU lives in the burstable one).
	confined []string
	// dirs are the cgroups the cpuset is written to: confined, and on cgroup v1, where every cpuset cgroup holds
	// its own cpuset.cpus, every confined pod's cgroup and its running containers' cgroups. On v2 a cgroup's effective CPUs are within
	// its parent's, so the confined ones are enough.
	dirs []string
	// container tells which of dirs are container cgroups.
	container []bool
}

func (v *beView) update(p *Plugin, pods []*statesinformer.PodMeta) {
	key := qosmanager.NewFingerprint()
	for _, m := range pods {
		if !confinedPod(m) {
			continue
		}
		key = key.Add(string(m.Pod.UID)).Add(string(m.KubeQoS))
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) { key = key.Add(st.ContainerID) })
	}
	if v.built && key == v.key {
		return
	}
	*v = beView{key: key, built: true, confined: []string{p.qosDir}, dirs: []string{p.qosDir}, container: []bool{false}}
	for _, m := range pods {
		if !confinedPod(m) {
			continue
		}
		podDir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		outside := m.KubeQoS != corev1.PodQOSBestEffort
		if outside {
			v.confined = append(v.confined, podDir)
		}
		if !p.v1 {
			if outside {
				v.dirs, v.container = append(v.dirs, podDir), append(v.container, false)
			}
			continue
		}
		v.dirs, v.container = append(v.dirs, podDir), append(v.container, false)
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) {
			if dir, err := p.d.Layout.ContainerDir(podDir, st.ContainerID); err == nil {
				v.dirs, v.container = append(v.dirs, dir), append(v.container, true)
			}
		})
	}
}

// confinedPod reports whether the cpuset policy confines pod m: a best-effort pod (PodMeta.BestEffort), or any
// pod in the besteffort QoS cgroup, which the kernel confines with it whatever its Gleaner class (on v1 a parent's
// cpuset must hold its children's, so those pods' cgroups must be written too).
func confinedPod(m *statesinformer.PodMeta) bool {
	return m.KubeQoS == corev1.PodQOSBestEffort || m.BestEffort
}

// cpuView is the CPUs best-effort pods may be given (qosmanager.CPUPool), with the last choice among them.
type cpuView struct {
	qosmanager.CPUPool
	// chosen is the last choice of chooseCPUs, for n CPUs, from the pool as last read; empty after each read.
	chosen  cpuset.CPUSet
	chosenN int
}

// choose is chooseCPUs of n CPUs from the view, computed again only when n or the view changed.
func (v *cpuView) choose(p *Plugin, n int) cpuset.CPUSet {
	if v.chosenN != n || v.chosen.IsEmpty() {
		v.chosen, v.chosenN = chooseCPUs(qosmanager.NodeTopology(p.d.Cache), v.Universe, v.Exclusive, n, p.minCPUs), n
	}
	return v.chosen
}

// update reads the CPUs again every qosmanager.CPUPoolRefresh or when the pods that count changed.
func (v *cpuView) update(p *Plugin, pods []*statesinformer.PodMeta) error {
	before := v.ReadAt
	if err := v.Update(p.d, pods); err != nil {
		return fmt.Errorf("finding the CPUs best-effort pods may use: %w", err)
	}
	if !v.ReadAt.Equal(before) {
		v.chosen = cpuset.CPUSet{}
	}
	return nil
}

// refresh reads the CPUs now.
func (v *cpuView) refresh(p *Plugin, pods []*statesinformer.PodMeta) error {
	if err := v.Refresh(p.d, pods); err != nil {
		return fmt.Errorf("finding the CPUs best-effort pods may use: %w", err)
	}
	v.chosen = cpuset.CPUSet{}
	return nil
}
