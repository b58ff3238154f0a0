package cpusuppress

import (
	"errors"
	"fmt"
	"slices"
	"time"

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
	key   uint64
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
	key := uint64(hashInit)
	for _, m := range pods {
		if !confinedPod(m) {
			continue
		}
		key = hash(hash(key, string(m.Pod.UID)), string(m.KubeQoS))
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) { key = hash(key, st.ContainerID) })
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

// cpuView is the CPUs best-effort pods may be given, read again every cpusRefresh or when a Guaranteed pod's
// containers change.
type cpuView struct {
	key uint64
	at  time.Time
	// universe is the CPUs of the kubepods cgroup (the most a pod may get), else the node's online CPUs.
	universe cpuset.CPUSet
	// exclusive are the CPUs that Guaranteed pods hold exclusively: under the CPU manager's static policy, each
	// container of a Guaranteed pod that requests whole CPUs gets a cpuset of its own, smaller than the node's.
	exclusive cpuset.CPUSet
	// chosen is the last choice of chooseCPUs, for n CPUs, from this view.
	chosen  cpuset.CPUSet
	chosenN int
}

// choose is chooseCPUs of n CPUs from the view, computed again only when n or the view changed.
func (v *cpuView) choose(p *Plugin, n int) cpuset.CPUSet {
	if v.chosenN != n || v.chosen.IsEmpty() {
		v.chosen, v.chosenN = chooseCPUs(p.topology(), v.universe, v.exclusive, n, p.minCPUs), n
	}
	return v.chosen
}

func (v *cpuView) update(p *Plugin, pods []*statesinformer.PodMeta) error {
	if !v.at.IsZero() && guaranteedKey(pods) == v.key && p.d.Clock.Since(v.at) < cpusRefresh {
		return nil
	}
	return v.refresh(p, pods)
}

func (v *cpuView) refresh(p *Plugin, pods []*statesinformer.PodMeta) error {
	universe, err := p.d.Cgroups.CPUSet(p.d.Layout.Kubepods())
	if err == nil && universe.IsEmpty() {
		err = errors.New("it is empty")
	}
	if err != nil {
		if t := p.topology(); t != nil {
			universe = t.CPUSet()
		}
	}
	if universe.IsEmpty() {
		return fmt.Errorf("finding the CPUs best-effort pods may use: the kubepods cgroup's cpuset cannot be read (%w) and the CPU topology is not known yet", err)
	}
	var exclusive []int
	for _, m := range pods {
		if m.KubeQoS != corev1.PodQOSGuaranteed || m.BestEffort || m.Pod.Status.Phase != corev1.PodRunning {
			continue
		}
		podDir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) {
			if !wholeCPUs(m.Pod, st.Name) {
				return
			}
			dir, err := p.d.Layout.ContainerDir(podDir, st.ContainerID)
			if err != nil {
				return
			}
			cpus, err := p.d.Cgroups.CPUSet(dir)
			if err != nil || cpus.IsEmpty() || cpus.Size() >= universe.Size() {
				return // gone, or not pinned
			}
			exclusive = append(exclusive, cpus.Intersection(universe).List()...)
		})
	}
	*v = cpuView{key: guaranteedKey(pods), at: p.d.Clock.Now(), universe: universe, exclusive: cpuset.New(exclusive...)}
	return nil
}

// wholeCPUs reports whether the pod's container requests a whole number of CPUs: what the CPU manager's static
// policy gives exclusive CPUs (in a Guaranteed pod).
func wholeCPUs(pod *corev1.Pod, container string) bool {
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if c.Name == container {
			milli := c.Resources.Requests.Cpu().MilliValue()
			return milli > 0 && milli%1000 == 0
		}
	}
	return false
}

// guaranteedKey fingerprints the running containers of Guaranteed pods.
func guaranteedKey(pods []*statesinformer.PodMeta) uint64 {
	key := uint64(hashInit)
	for _, m := range pods {
		if m.KubeQoS != corev1.PodQOSGuaranteed {
			continue
		}
		key = hash(key, string(m.Pod.UID))
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) { key = hash(key, st.ContainerID) })
	}
	return key
}

// FNV-1a, 64 bits; each string is followed by a separator byte so that ("ab", "c") and ("a", "bc") differ.
const (
	hashInit  = 14695981039346656037
	hashPrime = 1099511628211
)

func hash(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * hashPrime
	}
	return (h ^ 0xff) * hashPrime
}
