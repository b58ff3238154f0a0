package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// ColdMemoryName is the name of the cold memory collector.
const ColdMemoryName = "coldmemory"

// coldMemory samples the memory idle for at least DeviceOptions.ColdAge, anonymous and file pages apart, for the
// node (the root memory cgroup) and each pod, from kidled's memory.idle_page_stats (Anolis-like kernels; kidled
// scans every page once per scan period and keeps each page's idle age). From the node's and the pods' cold
// anonymous memory it derives the system part's, and reports the system memory usage without it: memory the
// system holds but has not touched for ColdAge, which swap or proactive reclaim could take back. (Usage excludes
// page cache already, so cold file pages are reported but not subtracted.)
//
// Upstream kernels have no per-cgroup idle statistics: /sys/kernel/mm/page_idle is a bitmap over every page frame,
// and turning it into per-pod bytes means walking /proc/kpagecgroup and the bitmap for all of memory each period.
// The agent does not do that; it says once that cold memory needs kidled, and steps aside.
type coldMemory struct {
	d    Deps
	dirs *podDirs
	pods map[string][2]string // pod UID -> namespace, name of pods with gauges
	said stepAside
}

// NewColdMemory returns the cold memory collector.
func NewColdMemory(d Deps) Collector {
	return &coldMemory{d: d, dirs: newPodDirs(d.Layout), pods: map[string][2]string{}}
}

// minAge is ColdAge in scan periods, rounded up.
func (c *coldMemory) minAge(period time.Duration) int {
	return int((c.d.Devices.ColdAge + period - 1) / period)
}

func (c *coldMemory) Collect(ctx context.Context, round *Round) error {
	period, err := system.KidledScanPeriod(c.d.SysRoot)
	if err != nil {
		return c.said.once(err)
	}
	c.said.reset()
	age := c.minAge(period)
	m := c.d.Metrics.Devices
	node, err := c.d.Cgroups.IdlePageStats("")
	if err != nil {
		return fmt.Errorf("reading the node's idle pages: %w", err)
	}
	nodeAnon, nodeFile := node.Cold(age)
	samples := []metriccache.Sample{
		{Key: metriccache.NamedKey(metriccache.NodeColdMemory, "anon"), Value: float64(nodeAnon)},
		{Key: metriccache.NamedKey(metriccache.NodeColdMemory, "file"), Value: float64(nodeFile)},
	}
	m.NodeColdMemory.WithLabelValues("anon").Set(float64(nodeAnon))
	m.NodeColdMemory.WithLabelValues("file").Set(float64(nodeFile))

	pods := round.Pods()
	fail := failures{what: "reading pod idle pages"}
	alive := map[string]bool{}
	liveNames := map[[2]string]bool{}
	var podsAnon uint64
	for _, meta := range pods {
		pod, uid := meta.Pod, string(meta.Pod.UID)
		alive[uid] = true
		liveNames[[2]string{pod.Namespace, pod.Name}] = true
		s, err := c.d.Cgroups.IdlePageStats(c.dirs.pod(meta))
		if err != nil {
			fail.add(meta.Key(), err)
			continue
		}
		anon, file := s.Cold(age)
		podsAnon += anon
		c.pods[uid] = [2]string{pod.Namespace, pod.Name}
		samples = append(samples,
			metriccache.Sample{Key: metriccache.PodNamedKey(metriccache.PodColdMemory, uid, "anon"), Value: float64(anon)},
			metriccache.Sample{Key: metriccache.PodNamedKey(metriccache.PodColdMemory, uid, "file"), Value: float64(file)})
		m.PodColdMemory.WithLabelValues(pod.Namespace, pod.Name, "anon").Set(float64(anon))
		m.PodColdMemory.WithLabelValues(pod.Namespace, pod.Name, "file").Set(float64(file))
	}
	// The system part's cold anonymous memory is the node's less the pods'; host applications' cold pages stay in
	// it, so the figure errs towards less hot usage only by what they hold cold. It needs every pod's reading and
	// the system usage of this round (the sysresource collector runs in every round of this one: its interval
	// divides this one's).
	if sys, ok := round.Value(metriccache.NodeKey(metriccache.SystemMemoryUsage)); ok && fail.failed == 0 {
		systemCold := float64(nodeAnon) - float64(podsAnon)
		hot := max(sys-max(systemCold, 0), 0)
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.SystemHotMemoryUsage), Value: hot})
		m.SystemHotMemory.Set(hot)
	}
	round.Append(samples...)
	c.dirs.retain()
	for uid, n := range c.pods {
		if alive[uid] {
			continue
		}
		if !liveNames[n] {
			m.PodColdMemory.DeletePartialMatch(prometheus.Labels{"namespace": n[0], "pod": n[1]})
		}
		delete(c.pods, uid)
	}
	return fail.err(len(pods))
}
