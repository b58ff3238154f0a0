package qosmanager

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

// CPUPoolRefresh is how often CPUPool.Update reads the CPUs again when no pod that counts changed (the kubelet's
// CPU manager reconciles every 10 s by default).
const CPUPoolRefresh = 10 * time.Second

// CPUPool is the node's CPUs as the kubelet's CPU manager divides them: the CPUs pods may use, those that
// containers hold exclusively, and the shared pool, the rest. Under the CPU manager's static policy each container
// of a Guaranteed pod that requests whole CPUs gets a cpuset of its own, smaller than the kubepods cgroup's; every
// other container runs on the shared pool. The zero value is an empty pool that Update fills.
//
// Which pods count: the running containers (ForRunningContainers, whatever the pod's phase: the running init
// container of a pod that is still pending holds its CPUs too) of Guaranteed pods that are not best-effort
// (PodMeta.BestEffort). A best-effort pod's cpuset is Gleaner's to set, not the CPU manager's: CPU suppression
// confines it to the best-effort CPUs, which are smaller than the node's, so counting it would take the CPUs
// best-effort pods share for the exclusive CPUs of one pod, and feed on itself.
type CPUPool struct {
	// Universe is the CPUs of the kubepods cgroup, the most a pod may get; the node's online CPUs (from the
	// topology the collectors found) when that cgroup's cpuset cannot be read.
	Universe cpuset.CPUSet
	// Exclusive are the CPUs of Universe that containers hold exclusively.
	Exclusive cpuset.CPUSet
	// Pinned are the containers that hold them, by cgroup directory, each with the key of its CPU usage series.
	Pinned map[string]metriccache.Key
	// ReadAt is when the pool was last read; zero before.
	ReadAt time.Time

	key Fingerprint
}

// Shared is the shared pool: Universe without Exclusive.
func (c *CPUPool) Shared() cpuset.CPUSet { return c.Universe.Difference(c.Exclusive) }

// Update reads the pool again when CPUPoolRefresh has passed since it was last read or the running containers of
// the pods that count changed; else it keeps what it holds. pods are the node's pods (States.GetAllPods).
func (c *CPUPool) Update(d Deps, pods []*statesinformer.PodMeta) error {
	if !c.ReadAt.IsZero() && poolKey(pods) == c.key && d.Clock.Since(c.ReadAt) < CPUPoolRefresh {
		return nil
	}
	return c.Refresh(d, pods)
}

// Refresh reads the pool now, through d.Cgroups, d.Layout and (for the topology) d.Cache. On an error the pool is
// left as it was.
func (c *CPUPool) Refresh(d Deps, pods []*statesinformer.PodMeta) error {
	universe, err := d.Cgroups.CPUSet(d.Layout.Kubepods())
	if err == nil && universe.IsEmpty() {
		err = errors.New("it is empty")
	}
	if err != nil {
		if t := NodeTopology(d.Cache); t != nil {
			universe = t.CPUSet()
		}
	}
	if universe.IsEmpty() {
		return fmt.Errorf("the kubepods cgroup's cpuset cannot be read (%w) and the CPU topology is not known yet", err)
	}
	var exclusive []int
	pinned := map[string]metriccache.Key{}
	for _, m := range pods {
		if !counts(m) {
			continue
		}
		podDir := d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) {
			if !wholeCPUs(m.Pod, st.Name) {
				return
			}
			dir, err := d.Layout.ContainerDir(podDir, st.ContainerID)
			if err != nil {
				return
			}
			cpus, err := d.Cgroups.CPUSet(dir)
			if err != nil || cpus.IsEmpty() || cpus.Size() >= universe.Size() {
				return // gone, or not pinned
			}
			exclusive = append(exclusive, cpus.Intersection(universe).List()...)
			pinned[dir] = metriccache.ContainerKey(metriccache.ContainerCPUUsage, string(m.Pod.UID), st.Name)
		})
	}
	*c = CPUPool{Universe: universe, Exclusive: cpuset.New(exclusive...), Pinned: pinned, ReadAt: d.Clock.Now(), key: poolKey(pods)}
	return nil
}

// counts tells the pods whose containers may hold CPUs exclusively (see CPUPool).
func counts(m *statesinformer.PodMeta) bool {
	return m.KubeQoS == corev1.PodQOSGuaranteed && !m.BestEffort
}

// wholeCPUs reports whether the pod's container requests a whole number of CPUs: what the CPU manager's static
// policy gives exclusive CPUs (in a Guaranteed pod).
func wholeCPUs(pod *corev1.Pod, container string) bool {
	c := ContainerSpec(pod, container)
	if c == nil {
		return false
	}
	milli := c.Resources.Requests.Cpu().MilliValue()
	return milli > 0 && milli%1000 == 0
}

// poolKey fingerprints the running containers of the pods that count.
func poolKey(pods []*statesinformer.PodMeta) Fingerprint {
	key := NewFingerprint()
	for _, m := range pods {
		if !counts(m) {
			continue
		}
		key = key.Add(string(m.Pod.UID))
		ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) { key = key.Add(st.ContainerID) })
	}
	return key
}

// NodeTopology is the node's CPU topology as the collectors found it (metriccache.InfoNodeTopology); nil before
// they did.
func NodeTopology(cache metriccache.Cache) *topology.Topology {
	if v, ok := cache.Info(metriccache.InfoNodeTopology); ok {
		if t, ok := v.(*topology.Topology); ok {
			return t
		}
	}
	return nil
}

// Fingerprint is a 64-bit FNV-1a hash of a sequence of strings, each followed by a separator byte so that ("ab",
// "c") and ("a", "bc") differ: a cheap key that tells a plugin whether the pods it derived something from changed.
// Start from NewFingerprint.
type Fingerprint uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// NewFingerprint is the fingerprint of no strings.
func NewFingerprint() Fingerprint { return fnvOffset }

// Add is the fingerprint of f's strings followed by s.
func (f Fingerprint) Add(s string) Fingerprint {
	h := uint64(f)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return Fingerprint((h ^ 0xff) * fnvPrime)
}
