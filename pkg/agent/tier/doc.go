// Package tier translates a pod's batch and mid resources (kubernetes.io/batch-cpu, batch-memory, mid-cpu,
// mid-memory) into the cgroup values the kubelet would have given it had they been native cpu and memory
// (Translate). To the kubelet such a pod is BestEffort; the runtime hook writes these values, and the QoS plugins
// read them to know which values the hook owns. It sits below both, so that neither imports the other.
package tier
