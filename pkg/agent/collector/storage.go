package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/storage"
)

// StorageName is the name of the storage collector.
const StorageName = "storage"

// storageInfo lists the node's block devices with their major:minor (sysfs) and the file systems holding the
// kubelet's and the container runtime's root directories (the host's mount table, /proc/1/mountinfo). It stores
// the devices in the cache (metriccache.InfoBlockDevices), where the pod I/O collector finds their names.
type storageInfo struct {
	d Deps
}

// NewStorage returns the storage collector.
func NewStorage(d Deps) Collector { return &storageInfo{d: d} }

func (s *storageInfo) Collect(ctx context.Context, round *Round) error {
	m := s.d.Metrics.Devices
	var errs []error
	devs, err := storage.Devices(s.d.SysRoot)
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%s: %w", err.Error(), system.ErrUnsupported) // a sysfs without block devices
	}
	if err != nil {
		errs = append(errs, err)
	}
	if devs != nil || err == nil {
		s.d.Cache.SetInfo(metriccache.InfoBlockDevices, devs)
		m.BlockDevice.Reset()
		m.BlockDeviceSize.Reset()
		for _, d := range devs {
			m.BlockDevice.WithLabelValues(d.Name, d.Device.String(), d.Disk, strconv.FormatBool(d.Rotational)).Set(1)
			m.BlockDeviceSize.WithLabelValues(d.Name).Set(float64(d.Size))
		}
	}
	mounts, err := s.d.Proc.MountInfo(1)
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%s (the agent needs the host's pid namespace to see its mounts): %w", err.Error(), system.ErrUnsupported)
	}
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	m.FileSystem.Reset()
	for _, r := range []struct{ role, dir string }{{"kubelet", s.d.Devices.KubeletRootDir}, {"runtime", s.d.Devices.RuntimeRootDir}} {
		fs, err := storage.FileSystemOf(mounts, r.dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("finding the file system of the %s root: %w", r.role, err))
			continue
		}
		m.FileSystem.WithLabelValues(r.role, fs.Path, fs.MountPoint, fs.Type, fs.Source, fs.Device.String()).Set(1)
	}
	return errors.Join(errs...)
}

// PodIOName is the name of the pod disk I/O collector.
const PodIOName = "podio"

// podIO reads each pod's disk bytes and operations per device from its cgroup's I/O statistics (blkio on v1,
// io.stat on v2), children included: the counters as read, and their rates for the cache. Devices are named after
// the storage collector's list when it has run, else by major:minor.
type podIO struct {
	d     Deps
	dirs  *podDirs
	rates *counters[ioKey]
	names map[string][2]string // pod UID -> namespace, name of pods with gauges
}

// ioKey names one I/O counter: a pod's, on a device, one of read bytes, write bytes, read ops, write ops.
type ioKey struct {
	pod   string
	dev   string
	field int
}

// NewPodIO returns the pod disk I/O collector.
func NewPodIO(d Deps) Collector {
	return &podIO{d: d, dirs: newPodDirs(d.Layout), rates: newCounters[ioKey](), names: map[string][2]string{}}
}

func (p *podIO) Collect(ctx context.Context, round *Round) error {
	names := map[string]string{}
	if v, ok := p.d.Cache.Info(metriccache.InfoBlockDevices); ok {
		if devs, ok := v.([]storage.BlockDevice); ok {
			for _, d := range devs {
				names[d.Device.String()] = d.Name
			}
		}
	}
	m := p.d.Metrics.Devices
	pods := round.Pods()
	fail := failures{what: "reading pod I/O statistics"}
	alive := make(map[string]bool, len(pods))
	liveNames := make(map[[2]string]bool, len(pods))
	var samples []metriccache.Sample
	for _, meta := range pods {
		pod := meta.Pod
		uid := string(pod.UID)
		alive[uid] = true
		liveNames[[2]string{pod.Namespace, pod.Name}] = true
		stats, err := p.d.Cgroups.IOStats(p.dirs.pod(meta))
		if err != nil {
			fail.add(meta.Key(), err)
			continue
		}
		p.names[uid] = [2]string{pod.Namespace, pod.Name}
		var total [4]float64
		complete := true
		for dev, s := range stats {
			name := names[dev.String()]
			if name == "" {
				name = dev.String()
			}
			for i, v := range [4]uint64{s.ReadBytes, s.WriteBytes, s.ReadOps, s.WriteOps} {
				counter, rate, dir := m.PodDiskBytes, m.PodDiskBytesRate, "read"
				if i >= 2 {
					counter, rate = m.PodDiskOperations, m.PodDiskOpsRate
				}
				if i%2 == 1 {
					dir = "write"
				}
				counter.Set(float64(v), pod.Namespace, pod.Name, name, dir)
				r, ok := p.rates.rate(ioKey{uid, dev.String(), i}, v, round.Time)
				if !ok {
					complete = false
					continue
				}
				total[i] += r
				rate.WithLabelValues(pod.Namespace, pod.Name, name, dir).Set(r)
			}
		}
		// A pod's first round, or a device that just appeared, only remembers the counters: its total would be
		// too low.
		if complete {
			samples = append(samples,
				metriccache.Sample{Key: metriccache.PodKey(metriccache.PodDiskReadBytes, uid), Value: total[0]},
				metriccache.Sample{Key: metriccache.PodKey(metriccache.PodDiskWriteBytes, uid), Value: total[1]})
		}
	}
	round.Append(samples...)
	p.rates.retain()
	p.dirs.retain()
	for uid, n := range p.names {
		if alive[uid] {
			continue
		}
		if !liveNames[n] { // a pod recreated under the same name owns the series now
			labels := prometheus.Labels{"namespace": n[0], "pod": n[1]}
			m.PodDiskBytes.DeletePartialMatch(labels)
			m.PodDiskOperations.DeletePartialMatch(labels)
			m.PodDiskBytesRate.DeletePartialMatch(labels)
			m.PodDiskOpsRate.DeletePartialMatch(labels)
		}
		delete(p.names, uid)
	}
	return fail.err(len(pods))
}
