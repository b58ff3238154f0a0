package collector

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/gpu"
)

// GPUName is the name of the GPU collector.
const GPUName = "gpu"

// gpuCollector reports the node's GPUs (model, UUID, memory, utilisation; at most DeviceOptions.GPUMaxDevices, by
// index) and, per container and pod, the GPU memory and SM share of their processes: NVML lists the processes
// with a context on each GPU, and /proc/<pid>/cgroup names the container cgroup a process is in, which the agent
// matches against the directories it knows for the pods' containers. Processes outside every pod (the host's) are
// not attributed.
//
// Without a GPU driver, or in a build without NVML (the default static build; see package gpu), it says so once
// and steps aside, trying again each round.
type gpuCollector struct {
	d     Deps
	lib   gpu.Library
	ready bool
	said  stepAside
	dirs  *podDirs
	// since is, per GPU UUID, the newest process utilisation sample seen, so each round reads only newer ones.
	since map[string]uint64
	// used are the pods that had GPU samples: they get zeros once their processes are gone, so their averages
	// fall instead of holding the last value.
	used map[string]bool
}

// NewGPU returns the GPU collector on NVML.
func NewGPU(d Deps) Collector { return newGPU(d, gpu.NewNVML()) }

func newGPU(d Deps, lib gpu.Library) *gpuCollector {
	return &gpuCollector{d: d, lib: lib, dirs: newPodDirs(d.Layout), since: map[string]uint64{}, used: map[string]bool{}}
}

// owner is who a cgroup directory's name belongs to: a pod, or a container of it ("" for the pod itself).
type owner struct {
	meta      *corev1.Pod
	container string
}

// gpuUse is what one container's (or a pod's own) processes use of one GPU.
type gpuUse struct {
	memory uint64
	sm     float64
}

// podGPU is what one pod's processes use of all its GPUs together.
type podGPU struct{ memory, sm float64 }

// deviceWalk is what one round's walk over the GPUs found.
type deviceWalk struct {
	devices []gpu.Device
	// samples are the GPUs' own samples; the pods' come from pods once pruning has added the silent ones.
	samples []metriccache.Sample
	// pods is what the pods' processes use, by pod UID.
	pods map[string]*podGPU
	// seen are the UUIDs of the GPUs read this round.
	seen map[string]bool
	errs []error
}

func (c *gpuCollector) Collect(ctx context.Context, round *Round) error {
	if !c.ready {
		if err := c.lib.Init(); err != nil {
			return c.said.once(fmt.Errorf("initialising the GPU library: %w", err))
		}
		c.ready = true
		c.said.reset()
	}
	w, err := c.walkDevices(round.Pods())
	if err != nil {
		return err
	}
	c.prune(w, round.Pods())
	samples := w.samples
	for uid, p := range w.pods {
		c.used[uid] = true
		samples = append(samples,
			metriccache.Sample{Key: metriccache.PodKey(metriccache.PodGPUMemory, uid), Value: p.memory},
			metriccache.Sample{Key: metriccache.PodKey(metriccache.PodGPUUtilization, uid), Value: p.sm})
	}
	c.d.Cache.SetInfo(metriccache.InfoGPUs, w.devices)
	round.Append(samples...)
	c.dirs.retain()
	return errors.Join(w.errs...)
}

// walkDevices reads the first GPUMaxDevices GPUs, sets their gauges and their containers' (after resetting all of
// them, so a GPU or container gone since the last round leaves no series), and sums each pod's use. It fails only
// when the GPUs cannot be counted; a GPU that cannot be read is an error in the walk's errs, and the others are
// still read.
func (c *gpuCollector) walkDevices(pods []*statesinformer.PodMeta) (*deviceWalk, error) {
	n, err := c.lib.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("counting GPUs: %w", err)
	}
	w := &deviceWalk{pods: map[string]*podGPU{}, seen: map[string]bool{}}
	if n > c.d.Devices.GPUMaxDevices {
		w.errs = append(w.errs, fmt.Errorf("%d GPUs, reporting the first %d (--gpu-max-devices)", n, c.d.Devices.GPUMaxDevices))
		n = c.d.Devices.GPUMaxDevices
	}
	owners := c.owners(pods)
	m := c.d.Metrics.Devices
	for _, g := range []interface{ Reset() }{m.GPUInfo, m.GPUMemoryTotal, m.GPUMemoryUsed, m.GPUUtilization, m.ContainerGPUMemory, m.ContainerGPUUtilization} {
		g.Reset()
	}
	for i := range n {
		dev, err := c.lib.Device(i)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("GPU %d: %w", i, err))
			continue
		}
		w.devices = append(w.devices, dev)
		w.seen[dev.UUID] = true
		idx := strconv.Itoa(dev.Index)
		m.GPUInfo.WithLabelValues(idx, dev.UUID, dev.Model).Set(1)
		m.GPUMemoryTotal.WithLabelValues(idx).Set(float64(dev.MemoryTotal))
		m.GPUMemoryUsed.WithLabelValues(idx).Set(float64(dev.MemoryUsed))
		m.GPUUtilization.WithLabelValues(idx).Set(dev.Utilization)
		w.samples = append(w.samples,
			metriccache.Sample{Key: metriccache.NamedKey(metriccache.GPUMemoryUsed, dev.UUID), Value: float64(dev.MemoryUsed)},
			metriccache.Sample{Key: metriccache.NamedKey(metriccache.GPUUtilization, dev.UUID), Value: dev.Utilization})

		uses, err := c.processes(dev, owners)
		if err != nil {
			w.errs = append(w.errs, fmt.Errorf("GPU %d (%s): %w", dev.Index, dev.UUID, err))
		}
		for o, u := range uses {
			if o.container != "" {
				m.ContainerGPUMemory.WithLabelValues(o.meta.Namespace, o.meta.Name, o.container, idx).Set(float64(u.memory))
				m.ContainerGPUUtilization.WithLabelValues(o.meta.Namespace, o.meta.Name, o.container, idx).Set(u.sm)
			}
			p := w.pods[string(o.meta.UID)]
			if p == nil {
				p = &podGPU{}
				w.pods[string(o.meta.UID)] = p
			}
			p.memory += float64(u.memory)
			p.sm += u.sm
		}
	}
	return w, nil
}

// prune forgets what the collector keeps between rounds for GPUs and pods that are gone: the sample cursor of a
// GPU the walk did not read, and the mark of a pod no longer on the node. A pod that is still there and used a GPU
// before but had no process on one this round gets zeros in w.pods, so its averages fall.
func (c *gpuCollector) prune(w *deviceWalk, pods []*statesinformer.PodMeta) {
	for uuid := range c.since {
		if !w.seen[uuid] {
			delete(c.since, uuid)
		}
	}
	alive := map[string]bool{}
	for _, meta := range pods {
		uid := string(meta.Pod.UID)
		alive[uid] = true
		if c.used[uid] && w.pods[uid] == nil {
			w.pods[uid] = &podGPU{}
		}
	}
	for uid := range c.used {
		if !alive[uid] {
			delete(c.used, uid)
		}
	}
}

// owners indexes the pods' and their running containers' cgroup directories by their last element, which holds
// the pod UID or the container ID: a process's cgroup path ends in one of them whatever the cgroup namespace it is
// read from shows above it.
func (c *gpuCollector) owners(pods []*statesinformer.PodMeta) map[string]owner {
	out := map[string]owner{}
	for _, meta := range pods {
		podDir := c.dirs.pod(meta)
		out[path.Base(podDir)] = owner{meta: meta.Pod}
		for _, s := range append(append([]corev1.ContainerStatus{}, meta.Pod.Status.InitContainerStatuses...), meta.Pod.Status.ContainerStatuses...) {
			if s.ContainerID == "" || s.State.Running == nil {
				continue
			}
			dir, err := c.dirs.container(podDir, s.ContainerID)
			if err != nil {
				continue // a runtime the layout does not know: its processes stay unattributed
			}
			out[path.Base(dir)] = owner{meta: meta.Pod, container: s.Name}
		}
	}
	return out
}

// processes attributes the memory and SM share of dev's processes to the pods' containers. Processes that ended
// between the listing and the cgroup read, or belong to no pod, are skipped.
func (c *gpuCollector) processes(dev gpu.Device, owners map[string]owner) (map[owner]gpuUse, error) {
	procs, err := c.lib.Processes(dev.Index)
	if err != nil {
		return nil, err
	}
	sm := map[int]float64{}
	samples, err := c.lib.ProcessUtilization(dev.Index, c.since[dev.UUID])
	var uerr error
	switch {
	case errors.Is(err, gpu.ErrNotSupported):
	case err != nil:
		uerr = err
	}
	newest := map[int]uint64{}
	for _, s := range samples {
		// Several samples of one process: the newest one stands for the interval.
		if s.Timestamp >= newest[s.PID] {
			newest[s.PID], sm[s.PID] = s.Timestamp, s.SM
		}
		c.since[dev.UUID] = max(c.since[dev.UUID], s.Timestamp)
	}
	uses := map[owner]gpuUse{}
	add := func(pid int, mem uint64) {
		o, ok := c.ownerOf(pid, owners)
		if !ok {
			return
		}
		u := uses[o]
		u.memory += mem
		u.sm += sm[pid]
		uses[o] = u
	}
	listed := map[int]bool{}
	for _, p := range procs {
		listed[p.PID] = true
		add(p.PID, p.Memory)
	}
	for pid := range sm { // sampled but no longer listed: its share still counts
		if !listed[pid] {
			add(pid, 0)
		}
	}
	return uses, uerr
}

// ownerOf finds the pod or container whose cgroup holds process pid.
func (c *gpuCollector) ownerOf(pid int, owners map[string]owner) (owner, bool) {
	if c.d.Proc == nil {
		return owner{}, false
	}
	p, err := c.d.Proc.CgroupPath(pid)
	if err != nil {
		return owner{}, false
	}
	// Walk up: a process in a child of the container's cgroup (some runtimes nest one) still belongs to it.
	for p = strings.TrimRight(p, "/"); p != "" && p != "/" && p != "."; p = path.Dir(p) {
		if o, ok := owners[path.Base(p)]; ok {
			return o, true
		}
	}
	return owner{}, false
}
