package metrics

import "github.com/prometheus/client_golang/prometheus"

// Devices are the gauges of the device and interference collectors: storage, CPI, cold memory and GPUs. Series of
// pods are labelled by namespace and pod; a collector deletes those of pods that left the node.
type Devices struct {
	// BlockDevice is 1 per block device, labelled with its name, major:minor, disk (for a partition) and whether
	// it rotates.
	BlockDevice *prometheus.GaugeVec
	// BlockDeviceSize is each block device's size in bytes.
	BlockDeviceSize *prometheus.GaugeVec
	// FileSystem is 1 per role ("kubelet", "runtime") with the file system holding that directory.
	FileSystem *prometheus.GaugeVec
	// PodDiskBytes is the bytes each pod's cgroup has read and written, by device and direction (read, write).
	PodDiskBytes *CumulativeVec
	// PodDiskOperations is the read and write operations of each pod's cgroup, by device and direction.
	PodDiskOperations *CumulativeVec
	// PodDiskBytesRate and PodDiskOpsRate are PodDiskBytes and PodDiskOperations per second over the last
	// collection interval. Deprecated (a rate is PromQL's to take); kept one release.
	PodDiskBytesRate, PodDiskOpsRate *prometheus.GaugeVec

	// ContainerCPI is each sampled container's cycles per instruction over the last interval.
	ContainerCPI *prometheus.GaugeVec
	// QoSCPI is the cycles per instruction of all sampled containers of a QoS class together.
	QoSCPI *prometheus.GaugeVec
	// CPIContainers is how many containers the CPI collector samples, and how many it leaves out (over its cap).
	CPIContainers *prometheus.GaugeVec

	// NodeColdMemory is the node's memory idle for at least the cold age, by kind (anon, file).
	NodeColdMemory *prometheus.GaugeVec
	// PodColdMemory is each pod's cold memory by kind.
	PodColdMemory *prometheus.GaugeVec
	// SystemHotMemory is the system memory usage less the system part's cold anonymous memory.
	SystemHotMemory prometheus.Gauge

	// GPUInfo is 1 per GPU, labelled with its index, UUID and model.
	GPUInfo *prometheus.GaugeVec
	// GPUMemoryTotal and GPUMemoryUsed are each GPU's memory in bytes.
	GPUMemoryTotal, GPUMemoryUsed *prometheus.GaugeVec
	// GPUUtilization is each GPU's busy share, 0..1.
	GPUUtilization *prometheus.GaugeVec
	// ContainerGPUMemory is the GPU memory of a container's processes, by GPU.
	ContainerGPUMemory *prometheus.GaugeVec
	// ContainerGPUUtilization is the SM share a container's processes used, by GPU, 0..1.
	ContainerGPUUtilization *prometheus.GaugeVec
}

func newDevices(reg prometheus.Registerer) *Devices {
	pod := []string{"namespace", "pod"}
	ctr := []string{"namespace", "pod", "container"}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	d := &Devices{
		BlockDevice: gauge("gleaner_agent_block_device_info", "1 per block device of the node (sysfs).",
			"device", "major_minor", "disk", "rotational"),
		BlockDeviceSize: gauge("gleaner_agent_block_device_size_bytes", "Size of a block device.", "device"),
		FileSystem: gauge("gleaner_agent_filesystem_info", "1 per role (kubelet, runtime): the file system holding that root directory.",
			"role", "path", "mountpoint", "fstype", "source", "major_minor"),
		PodDiskBytes: NewCumulativeVec("gleaner_agent_pod_disk_bytes_total",
			"Bytes a pod's cgroup has read from and written to a device since it was made (blkio on cgroup v1, io.stat on v2; children included), by device and direction (read, write), as last read.",
			append(pod, "device", "direction")...),
		PodDiskOperations: NewCumulativeVec("gleaner_agent_pod_disk_operations_total",
			"Read and write operations of a pod's cgroup on a device since it was made (blkio on cgroup v1, io.stat on v2; children included), by device and direction (read, write), as last read.",
			append(pod, "device", "direction")...),
		PodDiskBytesRate: gauge("gleaner_agent_pod_disk_bytes_per_second",
			"Deprecated: use rate() of gleaner_agent_pod_disk_bytes_total; removed after one release. Disk throughput of a pod's cgroup, by device and direction (read, write).",
			append(pod, "device", "direction")...),
		PodDiskOpsRate: gauge("gleaner_agent_pod_disk_ops_per_second",
			"Deprecated: use rate() of gleaner_agent_pod_disk_operations_total; removed after one release. Disk operations of a pod's cgroup, by device and direction (read, write).",
			append(pod, "device", "direction")...),
		ContainerCPI: gauge("gleaner_agent_container_cpi", "Cycles per instruction of a container over the last CPI interval (perf counters on its cgroup).", ctr...),
		QoSCPI:       gauge("gleaner_agent_qos_cpi", "Cycles per instruction of the sampled containers of a QoS class together.", "qos"),
		CPIContainers: gauge("gleaner_agent_cpi_containers", "Containers the CPI collector samples (state sampled) and leaves out over its cap (state capped).",
			"state"),
		NodeColdMemory:  gauge("gleaner_agent_node_cold_memory_bytes", "Memory of the node idle for at least the cold age (kidled), by kind (anon, file).", "kind"),
		PodColdMemory:   gauge("gleaner_agent_pod_cold_memory_bytes", "Memory of a pod idle for at least the cold age (kidled), by kind (anon, file).", append(pod, "kind")...),
		SystemHotMemory: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_agent_system_memory_hot_usage_bytes", Help: "System memory usage less the system part's cold anonymous memory (kidled)."}),
		GPUInfo:         gauge("gleaner_agent_gpu_info", "1 per GPU of the node (NVML).", "gpu", "uuid", "model"),
		GPUMemoryTotal:  gauge("gleaner_agent_gpu_memory_total_bytes", "Memory of a GPU.", "gpu"),
		GPUMemoryUsed:   gauge("gleaner_agent_gpu_memory_used_bytes", "Memory of a GPU in use.", "gpu"),
		GPUUtilization:  gauge("gleaner_agent_gpu_utilization_ratio", "Share of the last sample period a GPU was busy, 0..1.", "gpu"),
		ContainerGPUMemory: gauge("gleaner_agent_container_gpu_memory_bytes", "GPU memory of a container's processes, by GPU.",
			append(ctr, "gpu")...),
		ContainerGPUUtilization: gauge("gleaner_agent_container_gpu_utilization_ratio", "Share of a GPU's SMs a container's processes used, by GPU, 0..1.",
			append(ctr, "gpu")...),
	}
	reg.MustRegister(d.BlockDevice, d.BlockDeviceSize, d.FileSystem, d.PodDiskBytes, d.PodDiskOperations, d.PodDiskBytesRate,
		d.PodDiskOpsRate, d.ContainerCPI, d.QoSCPI,
		d.CPIContainers, d.NodeColdMemory, d.PodColdMemory, d.SystemHotMemory, d.GPUInfo, d.GPUMemoryTotal, d.GPUMemoryUsed,
		d.GPUUtilization, d.ContainerGPUMemory, d.ContainerGPUUtilization)
	return d
}
