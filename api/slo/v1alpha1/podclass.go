package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubectl/pkg/util/qos"
)

// PodClass is who a pod is for colocation: its priority class and QoS class, as ClassOf decides them.
//
// +kubebuilder:object:generate=false
type PodClass struct {
	// Priority is the pod's priority class: prod, mid, batch or free, never PriorityNone.
	Priority PriorityClass
	// QoS is the pod's Gleaner QoS class: LSE, LSR, LS, BE or SYSTEM, never QoSNone.
	QoS QoSClass
	// KubeQoS is the pod's Kubernetes QoS class: status.qosClass, else computed from its resources.
	KubeQoS corev1.PodQOSClass
	// BestEffort reports whether the pod is best-effort work: the only kind the agent's QoS plugins suppress,
	// throttle, evict or kill, and the only kind its Evictor accepts. A pod is best-effort when its priority class is
	// batch or free, or when its QoS label says BE (a pod in the prod band is best-effort only when labelled so; an
	// unlabelled Kubernetes BestEffort pod is batch already). Never best-effort, whatever their class: pods of the
	// system-critical priority classes and static pods, which Kubernetes itself protects from eviction or which
	// eviction cannot remove. Services, the mid tier and everything else are never best-effort.
	BestEffort bool
	// Mid reports whether the pod is in the mid tier and may be evicted for the services after every best-effort
	// pod: its priority class is mid and it is not best-effort (a mid-band pod labelled BE is best-effort), with the
	// same exceptions (system-critical priority, static pods). Mid pods run on what the services' predicted peak
	// leaves; when a service needs it back, they are the second to go (docs/qos.md).
	Mid bool
	// Unknown lists the class labels whose values are not classes, as "key=value"; nil when there are none.
	Unknown []string
}

// systemCriticalPriority is where Kubernetes' system-cluster-critical and system-node-critical classes start.
const systemCriticalPriority = 2000000000

// mirrorAnnotation marks the API server's copy of a static pod, which the kubelet runs from a file: evicting it
// through the API does nothing.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// ClassOf decides a pod's priority class and QoS class. It is the one answer to "who is this pod" for the manager
// and the agent alike; everything that asks whether a pod is best-effort or high-priority asks it.
//
// The priority class is the first of:
//
//  1. the label LabelPriorityClass (prod, mid, batch, free), else LabelPriorityClassAlias (koord-prod, koord-mid,
//     koord-batch, koord-free);
//  2. the band spec.priority falls into (9000-9999 prod, 7000-7999 mid, 5000-5999 batch, 3000-3999 free);
//  3. the QoS class: SYSTEM, LSE, LSR and LS are prod, BE is batch.
//
// The QoS class is the label LabelQoSClass, else LabelQoSClassAlias, else the Kubernetes QoS class: Guaranteed is
// LSR, Burstable LS, BestEffort BE.
//
// A label whose value is not a class is listed in Unknown. An unknown QoS value is ignored: the Kubernetes QoS
// class decides, a fact about the pod's resources. An unknown priority-class value makes the pod prod: the label
// says the pod's priority is not what spec.priority says, and which class it meant cannot be known; prod is the
// class that can never make batch capacity larger than it should be, so a typo never turns a service into room
// for batch work.
func ClassOf(pod *corev1.Pod) PodClass {
	c := PodClass{KubeQoS: qos.GetPodQOS(pod)}
	if q, v, ok := qosLabel(pod.Labels); ok {
		c.QoS = q
	} else {
		if v != "" {
			c.Unknown = append(c.Unknown, v)
		}
		c.QoS = qosOfKube(c.KubeQoS)
	}
	switch p, v, ok := priorityLabel(pod.Labels); {
	case ok:
		c.Priority = p
	case v != "":
		c.Unknown = append(c.Unknown, v)
		c.Priority = PriorityProd
	default:
		c.Priority = priorityBand(pod.Spec.Priority)
		if c.Priority == PriorityNone {
			c.Priority = priorityOfQoS(c.QoS)
		}
	}
	c.BestEffort = bestEffort(pod, c)
	c.Mid = !c.BestEffort && c.Priority == PriorityMid && !protected(pod)
	return c
}

// Evictable reports whether the agent may evict the pod for the services: a best-effort or a mid-tier pod.
func (c PodClass) Evictable() bool { return c.BestEffort || c.Mid }

// protected reports whether Kubernetes protects the pod from the agent's evictions: a pod of a system-critical
// priority class, or a static pod's mirror, which eviction through the API cannot remove.
func protected(pod *corev1.Pod) bool {
	if p := pod.Spec.Priority; p != nil && *p >= systemCriticalPriority {
		return true
	}
	_, mirror := pod.Annotations[mirrorAnnotation]
	return mirror
}

// bestEffort decides PodClass.BestEffort for pod, whose class c is decided otherwise.
func bestEffort(pod *corev1.Pod, c PodClass) bool {
	if protected(pod) {
		return false
	}
	if c.Priority == PriorityBatch || c.Priority == PriorityFree {
		return true
	}
	// c.QoS is BE also for an unlabelled Kubernetes BestEffort pod; only the label's word counts against the band.
	q, _, ok := qosLabel(pod.Labels)
	return ok && q == QoSBE
}

// EffectivePriority is the priority class of a reported pod, decided as ClassOf decides a pod's from what the
// report carries: its priority when that is a class, else that of its QoS class, else PriorityNone.
func (m PodMetricInfo) EffectivePriority() PriorityClass { return reportedPriority(m.Priority, m.QoS) }

// EffectivePriority is the priority class of a host application: its priority when that is a class, else that of
// its QoS class, else PriorityNone (an application the NodeSLO gives neither, which is high-priority).
func (a HostApplicationMetricInfo) EffectivePriority() PriorityClass {
	return reportedPriority(a.Priority, a.QoS)
}

// EffectivePriority is the priority class of a host application as the NodeSLO describes it, by the same rule as
// HostApplicationMetricInfo.EffectivePriority.
func (a HostApplicationSpec) EffectivePriority() PriorityClass {
	return reportedPriority(a.Priority, a.QoS)
}

func reportedPriority(p PriorityClass, q QoSClass) PriorityClass {
	switch p {
	case PriorityProd, PriorityMid, PriorityBatch, PriorityFree:
		return p
	}
	return priorityOfQoS(q)
}

// priorityLabel reads the priority-class labels: the class and true when the label in force names one; its
// "key=value" when it does not; nothing when neither label is set.
func priorityLabel(labels map[string]string) (PriorityClass, string, bool) {
	if v, ok := labels[LabelPriorityClass]; ok {
		switch p := PriorityClass(v); p {
		case PriorityProd, PriorityMid, PriorityBatch, PriorityFree:
			return p, "", true
		}
		return "", LabelPriorityClass + "=" + v, false
	}
	if v, ok := labels[LabelPriorityClassAlias]; ok {
		switch v {
		case "koord-prod":
			return PriorityProd, "", true
		case "koord-mid":
			return PriorityMid, "", true
		case "koord-batch":
			return PriorityBatch, "", true
		case "koord-free":
			return PriorityFree, "", true
		}
		return "", LabelPriorityClassAlias + "=" + v, false
	}
	return "", "", false
}

// qosLabel reads the QoS labels like priorityLabel reads the priority-class labels.
func qosLabel(labels map[string]string) (QoSClass, string, bool) {
	key := LabelQoSClass
	v, ok := labels[key]
	if !ok {
		key = LabelQoSClassAlias
		if v, ok = labels[key]; !ok {
			return "", "", false
		}
	}
	switch q := QoSClass(v); q {
	case QoSLSE, QoSLSR, QoSLS, QoSBE, QoSSystem:
		return q, "", true
	}
	return "", key + "=" + v, false
}

func qosOfKube(k corev1.PodQOSClass) QoSClass {
	switch k {
	case corev1.PodQOSGuaranteed:
		return QoSLSR
	case corev1.PodQOSBurstable:
		return QoSLS
	default:
		return QoSBE
	}
}

func priorityOfQoS(q QoSClass) PriorityClass {
	switch q {
	case QoSSystem, QoSLSE, QoSLSR, QoSLS:
		return PriorityProd
	case QoSBE:
		return PriorityBatch
	}
	return PriorityNone
}
