package metriccache

// The metrics of the device and interference collectors (storage, cold memory, GPU). Units as for the others;
// I/O in bytes per second.
const (
	// PodDiskReadBytes and PodDiskWriteBytes are a pod's disk throughput over all devices, bytes per second.
	PodDiskReadBytes  Metric = "pod_disk_read_bytes"
	PodDiskWriteBytes Metric = "pod_disk_write_bytes"

	// NodeColdMemory is the node's memory idle for at least the cold age, bytes, keyed by Name "anon" or "file".
	NodeColdMemory Metric = "node_cold_memory"
	// PodColdMemory is a pod's cold memory, bytes, keyed by Name "anon" or "file".
	PodColdMemory Metric = "pod_cold_memory"
	// SystemHotMemoryUsage is SystemMemoryUsage less the system part's cold anonymous memory, bytes.
	SystemHotMemoryUsage Metric = "system_hot_memory_usage"

	// GPUMemoryUsed is a GPU's memory in use, bytes, keyed by Name = the GPU's UUID.
	GPUMemoryUsed Metric = "gpu_memory_used"
	// GPUUtilization is a GPU's busy share, 0..1, keyed by Name = the GPU's UUID.
	GPUUtilization Metric = "gpu_utilization"
	// PodGPUMemory is the GPU memory of a pod's processes over all GPUs, bytes.
	PodGPUMemory Metric = "pod_gpu_memory"
	// PodGPUUtilization is the SM share a pod's processes used, summed over GPUs (1 = one whole GPU).
	PodGPUUtilization Metric = "pod_gpu_utilization"
)

// Info keys of the device collectors.
const (
	// InfoBlockDevices holds the node's []storage.BlockDevice.
	InfoBlockDevices = "block_devices"
	// InfoGPUs holds the node's []gpu.Device (model, UUID, memory total), in index order.
	InfoGPUs = "gpus"
)
