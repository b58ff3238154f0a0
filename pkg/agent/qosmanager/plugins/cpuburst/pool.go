package cpuburst

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

const (
	// poolRefresh is how often the CPUs held exclusively are read again when no Guaranteed pod changed (the
	// kubelet's CPU manager reconciles every 10 s by default).
	poolRefresh = 10 * time.Second
	// poolWindow is how old the collectors' last sample of the node's usage may be (they sample every second, each
	// sample the average of its second).
	poolWindow = 3 * time.Second
)

// pool is the node's share pool: the CPUs of the kubepods cgroup that no container holds exclusively. A container
// holds CPUs exclusively when it belongs to a Guaranteed pod, requests whole CPUs and its cpuset is smaller than the
// kubepods cgroup's (the kubelet's static CPU manager pinned it).
type pool struct {
	key uint64
	at  time.Time
	// size is the number of CPUs in the pool.
	size int
	// pinned are the pinned containers, by cgroup directory, each with the key of its usage series.
	pinned map[string]metriccache.Key
	err    error
}

// load is the share pool's usage in percent of its CPUs: the node's busy CPU minus the pinned containers', from the
// collectors' last samples (at most poolWindow old). ok is false when the node's usage is not known.
type load struct {
	percent float64
	ok      bool
	why     string
}

// update reads the pinned containers again every poolRefresh, or when a Guaranteed pod's containers changed.
func (v *pool) update(p *Plugin, pods []*statesinformer.PodMeta) {
	key := guaranteedKey(pods)
	if !v.at.IsZero() && key == v.key && p.d.Clock.Since(v.at) < poolRefresh {
		return
	}
	*v = pool{key: key, at: p.d.Clock.Now(), pinned: map[string]metriccache.Key{}}
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
		v.err = fmt.Errorf("the kubepods cgroup's cpuset cannot be read (%w) and the CPU topology is not known yet", err)
		return
	}
	exclusive := cpuset.New()
	for _, m := range pods {
		if m.KubeQoS != corev1.PodQOSGuaranteed {
			continue
		}
		podDir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		forRunning(m.Pod, func(c *corev1.Container, st *corev1.ContainerStatus) {
			milli := c.Resources.Requests.Cpu().MilliValue()
			if milli <= 0 || milli%1000 != 0 {
				return
			}
			dir, err := p.d.Layout.ContainerDir(podDir, st.ContainerID)
			if err != nil {
				return
			}
			cpus, err := p.d.Cgroups.CPUSet(dir)
			if err != nil || cpus.IsEmpty() || cpus.Size() >= universe.Size() {
				return
			}
			exclusive = exclusive.Union(cpus.Intersection(universe))
			v.pinned[dir] = metriccache.ContainerKey(metriccache.ContainerCPUUsage, string(m.Pod.UID), c.Name)
		})
	}
	v.size = universe.Difference(exclusive).Size()
}

// load measures the pool's usage now.
func (v *pool) load(p *Plugin) load {
	if v.err != nil {
		return load{why: "the share pool is not known: " + v.err.Error()}
	}
	if v.size == 0 {
		return load{percent: 100, ok: true}
	}
	now := p.d.Clock.Now()
	r, ok := p.d.Cache.Query(metriccache.NodeKey(metriccache.NodeCPUUsage), now.Add(-poolWindow), now)
	if !ok {
		return load{why: fmt.Sprintf("the node's CPU usage of the last %s is not known", poolWindow)}
	}
	used := r.Value(metriccache.Last)
	for _, k := range v.pinned {
		if r, ok := p.d.Cache.Query(k, now.Add(-poolWindow), now); ok {
			used -= r.Value(metriccache.Last)
		}
	}
	return load{percent: math.Max(used, 0) / float64(v.size) * 100, ok: true}
}

func (p *Plugin) topology() *topology.Topology {
	if v, ok := p.d.Cache.Info(metriccache.InfoNodeTopology); ok {
		if t, ok := v.(*topology.Topology); ok {
			return t
		}
	}
	return nil
}

// forRunning calls fn with each container of pod (init containers included, for sidecars) that runs now, with its
// status.
func forRunning(pod *corev1.Pod, fn func(*corev1.Container, *corev1.ContainerStatus)) {
	for _, pair := range []struct {
		spec   []corev1.Container
		status []corev1.ContainerStatus
	}{{pod.Spec.InitContainers, pod.Status.InitContainerStatuses}, {pod.Spec.Containers, pod.Status.ContainerStatuses}} {
		for i := range pair.status {
			st := &pair.status[i]
			if st.State.Running == nil || st.ContainerID == "" {
				continue
			}
			if j := slices.IndexFunc(pair.spec, func(c corev1.Container) bool { return c.Name == st.Name }); j >= 0 {
				fn(&pair.spec[j], st)
			}
		}
	}
}

// guaranteedKey fingerprints the running containers of Guaranteed pods (FNV-1a, a separator after each string).
func guaranteedKey(pods []*statesinformer.PodMeta) uint64 {
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		h = (h ^ 0xff) * 1099511628211
	}
	for _, m := range pods {
		if m.KubeQoS != corev1.PodQOSGuaranteed {
			continue
		}
		add(string(m.Pod.UID))
		forRunning(m.Pod, func(_ *corev1.Container, st *corev1.ContainerStatus) { add(st.ContainerID) })
	}
	return h
}
