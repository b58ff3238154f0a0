package metriccache

// Metric names a measured quantity. Its unit is part of its contract and listed with it.
type Metric string

// The metrics the collectors write. CPU is in cores (CPU-seconds per second), memory in bytes, ratios in 0..1.
const (
	// NodeCPUUsage is the node's busy CPU (user+nice+system+irq+softirq of /proc/stat), cores.
	NodeCPUUsage Metric = "node_cpu_usage"
	// NodeMemoryUsage is MemTotal - MemAvailable, bytes.
	NodeMemoryUsage Metric = "node_memory_usage"
	// NodePageCache is the node's page cache (Cached of /proc/meminfo), bytes.
	NodePageCache Metric = "node_page_cache"
	// NodePressure is the share of time tasks stalled on a resource, 0..1, keyed by Name "<resource>/<some|full>".
	NodePressure Metric = "node_pressure"

	// SystemCPUUsage is max(node - pods - host applications, 0) of CPU, cores.
	SystemCPUUsage Metric = "system_cpu_usage"
	// SystemMemoryUsage is max(node - pods - host applications, 0) of memory, bytes.
	SystemMemoryUsage Metric = "system_memory_usage"

	// PodCPUUsage is a pod's CPU usage, cores.
	PodCPUUsage Metric = "pod_cpu_usage"
	// PodMemoryUsage is a pod's memory usage without page cache, bytes.
	PodMemoryUsage Metric = "pod_memory_usage"
	// PodPageCache is a pod's page cache, bytes.
	PodPageCache Metric = "pod_page_cache"
	// PodCPUThrottledRatio is the share of CFS periods in which the pod hit its quota, 0..1.
	PodCPUThrottledRatio Metric = "pod_cpu_throttled_ratio"
	// PodPressure is a pod's stall share (cgroup v2 only), 0..1, keyed by Name "<resource>/<some|full>".
	PodPressure Metric = "pod_pressure"

	// ContainerCPUUsage is a container's CPU usage, cores.
	ContainerCPUUsage Metric = "container_cpu_usage"
	// ContainerMemoryUsage is a container's memory usage without page cache, bytes.
	ContainerMemoryUsage Metric = "container_memory_usage"

	// HostAppCPUUsage is a host application's CPU usage, cores, keyed by Name = the application's name.
	HostAppCPUUsage Metric = "host_app_cpu_usage"
	// HostAppMemoryUsage is a host application's memory usage without page cache, bytes.
	HostAppMemoryUsage Metric = "host_app_memory_usage"

	// BECPURealLimit is the CPU best-effort pods can get at most: min(besteffort quota, besteffort cpuset, node
	// CPUs), cores.
	BECPURealLimit Metric = "be_cpu_real_limit"
	// BECPURequest is the sum of the CPU requests of pods of QoS class BE (batch-cpu, else cpu), cores.
	BECPURequest Metric = "be_cpu_request"
	// BECPUUsage is the CPU usage of the besteffort cgroup, cores.
	BECPUUsage Metric = "be_cpu_usage"
)

// Key identifies one series.
type Key struct {
	// Metric is what the series measures.
	Metric Metric
	// Pod is the UID of the pod the series belongs to, "" for node-level series.
	Pod string
	// Container is the container's name within Pod, "" for pod- and node-level series.
	Container string
	// Name tells apart series of one metric that belong to no pod: a host application's name, a pressure
	// resource.
	Name string
}

// NodeKey is the key of a node-level series.
func NodeKey(m Metric) Key { return Key{Metric: m} }

// NamedKey is the key of a node-level series with a name (host application, pressure resource).
func NamedKey(m Metric, name string) Key { return Key{Metric: m, Name: name} }

// PodKey is the key of a pod's series.
func PodKey(m Metric, podUID string) Key { return Key{Metric: m, Pod: podUID} }

// PodNamedKey is the key of a pod's series with a name (pressure resource).
func PodNamedKey(m Metric, podUID, name string) Key { return Key{Metric: m, Pod: podUID, Name: name} }

// ContainerKey is the key of a container's series.
func ContainerKey(m Metric, podUID, container string) Key {
	return Key{Metric: m, Pod: podUID, Container: container}
}

// Sample is one value of one series.
type Sample struct {
	// Key is the series.
	Key Key
	// Value is the measured value in the metric's unit.
	Value float64
}

// Info keys of the static information collectors store with SetInfo.
const (
	// InfoNodeTopology holds the node's *topology.Topology.
	InfoNodeTopology = "node_topology"
)
