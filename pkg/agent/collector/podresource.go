package collector

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// PodResourceName is the name of the pod resource collector.
const PodResourceName = "podresource"

// podResource samples every pod's and container's CPU (cgroup CPU time over wall time) and memory (anonymous +
// unevictable, without page cache) from their cgroups, and each pod's page cache from the same memory.stat.
type podResource struct {
	d     Deps
	dirs  *podDirs
	pods  *rates[types.UID]
	ctrs  *rates[containerKey]
	names map[types.UID][2]string // namespace, name of pods with usage gauges
}

type containerKey struct {
	pod  types.UID
	name string
}

// NewPodResource returns the pod resource collector.
func NewPodResource(d Deps) Collector {
	return &podResource{d: d, dirs: newPodDirs(d.Layout), pods: newRates[types.UID](), ctrs: newRates[containerKey](), names: map[types.UID][2]string{}}
}

func (p *podResource) Collect(ctx context.Context, round *Round) error {
	pods := round.Pods()
	now := round.Time
	samples := make([]metriccache.Sample, 0, 7*len(pods))
	fail := failures{what: "reading pod cgroups"}
	alive := make(map[types.UID]bool, len(pods))
	qosCPU, qosMemory := map[slov1alpha1.QoSClass]float64{}, map[slov1alpha1.QoSClass]float64{}
	for _, m := range pods {
		pod := m.Pod
		uid := string(pod.UID)
		alive[pod.UID] = true
		dir := p.dirs.pod(m)
		usage, err := p.d.Cgroups.CPUUsage(dir)
		if err != nil {
			fail.add(m.Key(), err)
			continue
		}
		mem, err := p.d.Cgroups.MemoryStat(dir)
		if err != nil {
			fail.add(m.Key(), err)
			continue
		}
		memUsage := float64(mem.Usage())
		samples = append(samples,
			metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, uid), Value: memUsage},
			metriccache.Sample{Key: metriccache.PodKey(metriccache.PodPageCache, uid), Value: float64(mem.Cache)},
		)
		p.d.Metrics.PodMemoryUsage.WithLabelValues(pod.Namespace, pod.Name).Set(memUsage)
		qosMemory[m.QoS] += memUsage
		p.names[pod.UID] = [2]string{pod.Namespace, pod.Name}
		p.d.Metrics.PodCPUSeconds.Set(usage.Seconds(), pod.Namespace, pod.Name)
		if cores, ok := p.pods.rate(pod.UID, usage, now); ok {
			samples = append(samples, metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUUsage, uid), Value: cores})
			p.d.Metrics.PodCPUUsage.WithLabelValues(pod.Namespace, pod.Name).Set(cores)
			qosCPU[m.QoS] += cores
		}
		samples = p.containers(samples, pod, dir, now, &fail)
	}
	round.Append(samples...)
	setByQoS(p.d.Metrics.QoSCPUUsage, qosCPU)
	setByQoS(p.d.Metrics.QoSMemoryUsage, qosMemory)
	p.pods.retain()
	p.ctrs.retain()
	p.dirs.retain()
	// Series are labelled by namespace and name: a pod recreated under the same name (a StatefulSet's) owns the
	// series of its predecessor, which must not be deleted with it (its CPU counter starts again from the new
	// cgroup's: a reset).
	liveNames := make(map[[2]string]bool, len(pods))
	for _, m := range pods {
		liveNames[[2]string{m.Pod.Namespace, m.Pod.Name}] = true
	}
	for uid, n := range p.names {
		if !alive[uid] {
			if !liveNames[n] {
				p.d.Metrics.DeletePod(n[0], n[1])
			}
			delete(p.names, uid)
		}
	}
	return fail.err(len(pods))
}

// setByQoS replaces the series of g with one per class of sums: a class whose last pod went loses its series.
func setByQoS(g *prometheus.GaugeVec, sums map[slov1alpha1.QoSClass]float64) {
	g.Reset()
	for q, v := range sums {
		g.WithLabelValues(string(q)).Set(v)
	}
}

// containers appends the samples of pod's running containers (sidecars included).
func (p *podResource) containers(samples []metriccache.Sample, pod *corev1.Pod, podDir string, now time.Time, fail *failures) []metriccache.Sample {
	uid := string(pod.UID)
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			samples = p.container(samples, pod, uid, podDir, &statuses[i], now, fail)
		}
	}
	return samples
}

// container appends the samples of one running container.
func (p *podResource) container(samples []metriccache.Sample, pod *corev1.Pod, uid, podDir string, s *corev1.ContainerStatus, now time.Time, fail *failures) []metriccache.Sample {
	if s.ContainerID == "" || s.State.Running == nil {
		return samples
	}
	dir, err := p.dirs.container(podDir, s.ContainerID)
	if err != nil {
		fail.add(pod.Namespace+"/"+pod.Name+"/"+s.Name, err)
		return samples
	}
	usage, err := p.d.Cgroups.CPUUsage(dir)
	if err != nil {
		fail.add(pod.Namespace+"/"+pod.Name+"/"+s.Name, err)
		return samples
	}
	mem, err := p.d.Cgroups.MemoryStat(dir)
	if err != nil {
		fail.add(pod.Namespace+"/"+pod.Name+"/"+s.Name, err)
		return samples
	}
	samples = append(samples, metriccache.Sample{Key: metriccache.ContainerKey(metriccache.ContainerMemoryUsage, uid, s.Name), Value: float64(mem.Usage())})
	if cores, ok := p.ctrs.rate(containerKey{pod.UID, s.Name}, usage, now); ok {
		samples = append(samples, metriccache.Sample{Key: metriccache.ContainerKey(metriccache.ContainerCPUUsage, uid, s.Name), Value: cores})
	}
	return samples
}
