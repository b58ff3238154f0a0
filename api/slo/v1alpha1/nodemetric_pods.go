package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRecord is one pod's record in a NodeMetric, whichever list of the status carries it (NodeMetricStatus.PodRecord).
// It is a value read from the status, not part of the API.
//
// +kubebuilder:object:generate=false
type PodRecord struct {
	// UID is the pod's UID; empty only in a PodsMetric record written without one.
	UID string
	// Namespace and Name are the pod's, for PodsMetric records; empty for PodUsages records, which carry the UID only.
	Namespace, Name string
	// Priority is the pod's priority class as the agent reported it (EffectivePriority of a PodsMetric record).
	Priority PriorityClass

	usage    corev1.ResourceList // a PodsMetric record's
	cpu, mem int64               // a PodUsages record's
	compact  bool
}

// PodRecords is the number of pod records of the status: those of PodUsages when it has any, else those of
// PodsMetric (the report of an agent from before PodUsages).
func (s *NodeMetricStatus) PodRecords() int {
	if len(s.PodUsages) > 0 {
		return len(s.PodUsages)
	}
	return len(s.PodsMetric)
}

// PodRecord returns the i-th pod record, 0 <= i < PodRecords(). It allocates nothing: the manager reads every
// record of every report.
func (s *NodeMetricStatus) PodRecord(i int) PodRecord {
	if len(s.PodUsages) > 0 {
		u := &s.PodUsages[i]
		p := u.Priority
		if p == "" {
			p = PriorityProd
		}
		return PodRecord{UID: u.UID, Priority: p, cpu: u.CPUMillis, mem: u.MemoryBytes, compact: true}
	}
	m := &s.PodsMetric[i]
	return PodRecord{UID: m.UID, Namespace: m.Namespace, Name: m.Name, Priority: m.EffectivePriority(), usage: m.Usage}
}

// Usage is the pod's usage of r (cpu or memory) and whether the record has one; a record of PodUsages has both.
func (p PodRecord) Usage(r corev1.ResourceName) (resource.Quantity, bool) {
	if !p.compact {
		q, ok := p.usage[r]
		return q, ok
	}
	switch r {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(p.cpu, resource.DecimalSI), true
	case corev1.ResourceMemory:
		return *resource.NewQuantity(p.mem, resource.BinarySI), true
	}
	return resource.Quantity{}, false
}

// String names the pod for messages: namespace/name, or its UID when the record carries no name.
func (p PodRecord) String() string {
	if p.Name != "" {
		return p.Namespace + "/" + p.Name
	}
	return "uid " + p.UID
}

// NewPodUsage is the PodUsages record of a pod of class priority with usage (cpu and memory; others are not
// reported) and gpu (nil when none).
func NewPodUsage(uid string, priority PriorityClass, usage corev1.ResourceList, gpu *PodGPUUsage) PodUsage {
	if priority == PriorityProd {
		priority = ""
	}
	return PodUsage{UID: uid, Priority: priority, CPUMillis: usage.Cpu().MilliValue(), MemoryBytes: usage.Memory().Value(), GPU: gpu}
}
