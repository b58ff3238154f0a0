package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Extended resources that gleaner-manager publishes in node.status.allocatable and that batch and mid pods request.
// The names are Koordinator's, so workloads written for it schedule unchanged.
const (
	// BatchCPU is reclaimed CPU for batch pods, in millicores (an integer: "1200" means 1.2 cores).
	BatchCPU corev1.ResourceName = "kubernetes.io/batch-cpu"
	// BatchMemory is reclaimed memory for batch pods, in bytes.
	BatchMemory corev1.ResourceName = "kubernetes.io/batch-memory"
	// MidCPU is the CPU of the mid tier, in millicores.
	MidCPU corev1.ResourceName = "kubernetes.io/mid-cpu"
	// MidMemory is the memory of the mid tier, in bytes.
	MidMemory corev1.ResourceName = "kubernetes.io/mid-memory"
)

// Pod labels Gleaner reads (ClassOf says how). Of each pair, the gleaner.sh label wins when both are set; the other
// is Koordinator's label, so pods written for it keep their meaning.
const (
	// LabelPriorityClass sets a pod's priority class over its spec.priority: prod, mid, batch or free.
	LabelPriorityClass = "gleaner.sh/priority-class"
	// LabelPriorityClassAlias is Koordinator's priority-class label, with its
	// values koord-prod, koord-mid, koord-batch and koord-free; honoured when LabelPriorityClass is absent.
	LabelPriorityClassAlias = "koordinator.sh/priority-class"
	// LabelQoSClass sets a pod's Gleaner QoS class (LSE, LSR, LS, BE, SYSTEM).
	LabelQoSClass = "gleaner.sh/qos-class"
	// LabelQoSClassAlias is Koordinator's QoS label, honoured when LabelQoSClass is absent.
	LabelQoSClassAlias = "koordinator.sh/qosClass"
)

// AnnotationCPUBurst is the pod annotation that sets the pod's own CPU burst: a JSON CPUBurstConfig, such as
// {"policy":"none"} to opt out or {"cpuBurstPercent":50,"cfsQuotaBurstPercent":200}. Fields it leaves out come from
// the node's cpuBurstStrategy; its policy may only narrow the node's (a pod cannot turn on what the node has off).
// A malformed value is ignored for that pod, with a Warning event, and the node's strategy applies.
const AnnotationCPUBurst = "gleaner.sh/cpu-burst"

// AnnotationCPUBurstAlias is Koordinator's AnnotationCPUBurst, read when the pod has no gleaner.sh one. Like
// every Koordinator JSON annotation here, it is read as Koordinator reads it: a field Gleaner does not have is left
// out, with a Warning event naming it, where in a gleaner.sh annotation it refuses the value.
const AnnotationCPUBurstAlias = "koordinator.sh/cpuBurst"

// AnnotationCPUQOS is the pod annotation that sets the pod's own CPU QoS: a JSON CPUQOSCfg with Koordinator's
// schedIdle, such as {"enable": true, "groupIdentity": -1} or {"enable": true, "schedIdle": 1}, which runs the pod
// as SCHED_IDLE (cpu.idle 1) although its class does not; without "enable": true it asks for nothing. It may only
// narrow its class's: a pod of a class that runs idle cannot leave it. A malformed value, or one its class does not
// allow, is ignored with a Warning event, and the class's applies.
const AnnotationCPUQOS = "gleaner.sh/cpu-qos"

// AnnotationCPUQOSAlias is Koordinator's AnnotationCPUQOS, read when the pod has no gleaner.sh one.
const AnnotationCPUQOSAlias = "koordinator.sh/cpuQOS"

// AnnotationMemoryQOS is the pod annotation that narrows its class's memory QoS for the pod: a JSON object with a
// policy ("default" or "auto": the class's values; "none": no protection) and MemoryQOS fields, such as
// {"policy": "none"} or {"throttlingPercent": 80}. A pod whose class has memory QoS off gets none, whatever its
// policy. A pod may only lower its protection and raise its throttling; anything else is ignored with a Warning
// event.
const AnnotationMemoryQOS = "gleaner.sh/memory-qos"

// AnnotationMemoryQOSAlias is Koordinator's AnnotationMemoryQOS, read when the pod has no gleaner.sh one.
const AnnotationMemoryQOSAlias = "koordinator.sh/memoryQOS"

// AnnotationBlkIOQOS is the pod annotation that narrows the block I/O caps and weight its class gives it: a JSON
// BlkIOQOS, such as {"blocks": [{"name": "/dev/vdb", "type": "device", "ioCfg": {"writeBPS": 10485760}}]}. A pod
// may only lower a cap or its weight, or set a cap where its class has none; anything else is ignored with a
// Warning event, and the class's apply.
const AnnotationBlkIOQOS = "gleaner.sh/blkio-qos"

// AnnotationBlkIOQOSAlias is Koordinator's AnnotationBlkIOQOS, read when the pod has no gleaner.sh one.
const AnnotationBlkIOQOSAlias = "koordinator.sh/blkioQOS"

// AnnotationNetworkQOS is the pod annotation that lowers the egress bandwidth its class gives it: a JSON object
// {"egressLimit": "20M"} (bits per second, or an integer percentage of the node's total), as Koordinator's. The
// pod's traffic then has a limit of its own inside its class's. ingressLimit is accepted and not enforced. A limit
// above the class's, or a malformed value, is ignored with a Warning event, and the class's applies.
const AnnotationNetworkQOS = "gleaner.sh/network-qos"

// AnnotationNetworkQOSAlias is Koordinator's AnnotationNetworkQOS, read when the pod has no gleaner.sh one.
const AnnotationNetworkQOSAlias = "koordinator.sh/networkQOS"

// Pod annotations that order a pod among the pods of its tier for the agent's evictions (memory, CPU satisfaction,
// allocatable): an int32, lower first, before spec.priority; 0 when unset. A best-effort pod always goes before
// every mid-tier pod whatever it says. Of the pair the gleaner.sh annotation wins when both are set; the other is
// Koordinator's. A malformed value counts as 0, with a Warning event.
const (
	// AnnotationEvictionPriority is the pod's eviction priority, such as "-10" to go first.
	AnnotationEvictionPriority = "gleaner.sh/eviction-priority"
	// AnnotationEvictionPriorityAlias is Koordinator's AnnotationEvictionPriority.
	AnnotationEvictionPriorityAlias = "koordinator.sh/eviction-priority"
)

// Pod annotations that set the oom_score_adj of a pod's containers over the class's value (the runtime hook's OOM
// order), within what the class allows: a batch or free pod only 1000, a mid pod 334 or more, any other pod -997 or
// more. Of each pair the gleaner.sh annotation wins when both are set; the other is Koordinator's. A malformed
// value, or one outside the class's range, is ignored with a Warning event, and the class's value applies.
const (
	// AnnotationOOMScoreAdj is the value for every container of the pod: an integer, such as "-500".
	AnnotationOOMScoreAdj = "gleaner.sh/oom-score-adj"
	// AnnotationOOMScoreAdjAlias is Koordinator's AnnotationOOMScoreAdj.
	AnnotationOOMScoreAdjAlias = "koordinator.sh/oom-score-adj"
	// AnnotationOOMScoreAdjSpec is the value per container, a JSON object such as {"app": -500, "sidecar": 200};
	// a container it does not name gets AnnotationOOMScoreAdj's.
	AnnotationOOMScoreAdjSpec = "gleaner.sh/oom-score-adj-spec"
	// AnnotationOOMScoreAdjSpecAlias is Koordinator's AnnotationOOMScoreAdjSpec.
	AnnotationOOMScoreAdjSpecAlias = "koordinator.sh/oom-score-adj-spec"
)

// QoSClass is a pod's colocation QoS class. It is independent of the Kubernetes QoS class (Guaranteed, Burstable,
// BestEffort): it says how much interference a pod tolerates, not how its requests relate to its limits.
// +kubebuilder:validation:Enum=LSE;LSR;LS;BE;SYSTEM;NONE
type QoSClass string

// The QoS classes, from the most to the least protected.
const (
	// QoSLSE is latency-sensitive exclusive: dedicated cores, shared with nobody.
	QoSLSE QoSClass = "LSE"
	// QoSLSR is latency-sensitive reserved: dedicated cores that BE pods may borrow when idle.
	QoSLSR QoSClass = "LSR"
	// QoSLS is latency-sensitive: the ordinary online service, on the shared pool.
	QoSLS QoSClass = "LS"
	// QoSBE is best-effort: batch work that runs on reclaimed resources and is suppressed or evicted first.
	QoSBE QoSClass = "BE"
	// QoSSystem is for node daemons and host applications outside the pod QoS tiers.
	QoSSystem QoSClass = "SYSTEM"
	// QoSNone means the pod carries no QoS class.
	QoSNone QoSClass = "NONE"
)

// PriorityClass is the colocation priority band a pod's spec.priority falls into.
// +kubebuilder:validation:Enum=prod;mid;batch;free;none
type PriorityClass string

// The priority bands and their spec.priority ranges (inclusive).
const (
	// PriorityProd is for production services, priority 9000-9999.
	PriorityProd PriorityClass = "prod"
	// PriorityMid is for the mid tier, priority 7000-7999.
	PriorityMid PriorityClass = "mid"
	// PriorityBatch is for batch work, priority 5000-5999.
	PriorityBatch PriorityClass = "batch"
	// PriorityFree is for free work, priority 3000-3999.
	PriorityFree PriorityClass = "free"
	// PriorityNone means no class is known. ClassOf never gives it to a pod (the QoS class decides then); a
	// NodeMetric may report it for a host application or a pod. It is high-priority (see HighPriority).
	PriorityNone PriorityClass = "none"
)

// HighPriority reports whether work of this class is high-priority when batch resources are calculated: every
// class but batch and free, PriorityNone included. Batch capacity must leave room for what high-priority work uses.
func (p PriorityClass) HighPriority() bool {
	return p != PriorityBatch && p != PriorityFree
}

// priorityBand returns the band of a spec.priority value; nil (no priority) and values outside every band are
// PriorityNone.
func priorityBand(priority *int32) PriorityClass {
	if priority == nil {
		return PriorityNone
	}
	switch p := *priority; {
	case p >= 9000 && p <= 9999:
		return PriorityProd
	case p >= 7000 && p <= 7999:
		return PriorityMid
	case p >= 5000 && p <= 5999:
		return PriorityBatch
	case p >= 3000 && p <= 3999:
		return PriorityFree
	default:
		return PriorityNone
	}
}
