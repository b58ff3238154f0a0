package runtimehook

// CPUSetFeatureName is the feature that keeps best-effort containers' cpusets within their pod cgroup's.
const CPUSetFeatureName = "besteffort-cpuset"

// cpusetFeature gives a best-effort pod's container its pod cgroup's CPUs where the runtime asks for CPUs outside
// them (the kubelet's static CPU manager sends the shared pool), at creation and in every update: on cgroup v1 CPU
// suppression's cpuset policy narrows best-effort pod cgroups, and the kernel would refuse the wider set. The
// reconciler leaves cpusets to CPU suppression, which writes them to running containers itself.
type cpusetFeature struct{ fit fitter }

var _ ContainerFeature = cpusetFeature{}

func newCPUSetFeature(d Deps) (Feature, error) { return cpusetFeature{fit: d.fitter()}, nil }

// Name implements Feature.
func (cpusetFeature) Name() string { return CPUSetFeatureName }

// ContainerValues implements ContainerFeature.
func (f cpusetFeature) ContainerValues(t Target) (Values, error) {
	if (t.Stage != StageCreateContainer && t.Stage != StageUpdateContainer) || !t.Pod.BestEffort {
		return Values{}, nil
	}
	cpus, narrow := f.fit.cpuSet(t.PodDir, t.RequestedCPUs)
	if !narrow {
		return Values{}, nil
	}
	return Values{CPUs: cpus}, nil
}
