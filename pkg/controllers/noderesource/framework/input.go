package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
)

// PodUsage returns a pod's measured usage of r from the NodeMetric (held to [0, capacity], see Usage) and whether
// the NodeMetric has a record of the pod. A record is the pod's when it carries the pod's UID, or, for a record
// without a UID, the pod's namespace and name: a record of an earlier pod of the same name (a StatefulSet's pod
// recreated) is never taken for the new one's.
func (in *Input) PodUsage(pod *podcache.Pod, r corev1.ResourceName) (int64, bool) {
	i, ok := in.podRecord(pod)
	if !ok {
		return 0, false
	}
	q, _ := in.Metric.Status.PodRecord(i).Usage(r)
	return in.Usage(q, r), true
}

// podRecord returns the index of a pod's record in the NodeMetric's pod records (slov1alpha1.NodeMetricStatus.PodRecord:
// podUsages, or for an agent from before them, podsMetric).
func (in *Input) podRecord(pod *podcache.Pod) (int, bool) {
	if in.Metric == nil {
		return 0, false
	}
	if in.podRecords == nil {
		n := in.Metric.Status.PodRecords()
		in.podRecords = make(map[podRecordKey]int, n)
		for i := range n {
			pm := in.Metric.Status.PodRecord(i)
			if pm.UID != "" {
				in.podRecords[podRecordKey{uid: pm.UID}] = i
			} else {
				in.podRecords[podRecordKey{namespace: pm.Namespace, name: pm.Name}] = i
			}
		}
	}
	if i, ok := in.podRecords[podRecordKey{uid: string(pod.UID)}]; ok {
		return i, true
	}
	i, ok := in.podRecords[podRecordKey{namespace: pod.Namespace, name: pod.Name}]
	return i, ok
}

// podRecordKey finds a pod's record in a NodeMetric: by UID, or for a record without one, by namespace and name
// (uid empty). A struct rather than joined strings: no string is built per lookup.
type podRecordKey struct{ uid, namespace, name string }

// UnattributedPods returns the NodeMetric's pod records that no active pod of Pods claims (see PodUsage): pods the
// manager's cache does not hold yet (created a moment ago), no longer holds (deleted while their processes still
// run), or holds as ended (Succeeded or Failed while the NodeMetric still averages their last minutes). Their usage
// is real and must be counted by what the records themselves say of the pods, their usage through Usage.
func (in *Input) UnattributedPods() []slov1alpha1.PodRecord {
	if in.Metric == nil || in.Metric.Status.PodRecords() == 0 {
		return nil
	}
	claimed := make([]bool, in.Metric.Status.PodRecords())
	for _, pod := range in.Pods {
		if !Active(pod) {
			continue
		}
		if i, ok := in.podRecord(pod); ok {
			claimed[i] = true
		}
	}
	var out []slov1alpha1.PodRecord
	for i, c := range claimed {
		if !c {
			out = append(out, in.Metric.Status.PodRecord(i))
		}
	}
	return out
}

// PodClass is the pod's priority class and QoS class (slov1alpha1.ClassOf), decided when the pod reached the cache.
func (in *Input) PodClass(pod *podcache.Pod) slov1alpha1.PodClass { return pod.Class }

// MemoryPressure is the memory pressure the node's NodeMetric reports (status.memoryPressure): nil when there is
// none, or no NodeMetric.
func (in *Input) MemoryPressure() *slov1alpha1.MemoryPressure {
	if in.Metric == nil {
		return nil
	}
	return in.Metric.Status.MemoryPressure
}

// MetricProblem says why the node's NodeMetric cannot be used for a calculation, or "" when it can: it must exist,
// carry node usage, be younger than the strategy's degradeTimeMinutes, and not be stamped further ahead of the
// manager's clock than MaxClockSkew (slov1alpha1.NodeMetricProblem, the rule kubectl glean top shares).
func (in *Input) MetricProblem() string {
	if reason, message := in.MetricUsability(); reason != slov1alpha1.ReasonNodeMetricFresh {
		return message
	}
	return ""
}

// MetricUsability is MetricProblem as a reason (slov1alpha1.ReasonNodeMetric...) and a message, which says how old
// the report is when it can be used too.
func (in *Input) MetricUsability() (reason, message string) {
	limit := time.Duration(ptr.Deref(in.Strategy.DegradeTimeMinutes, 0)) * time.Minute
	return slov1alpha1.NodeMetricUsability(in.Node.Name, in.Metric, limit, in.Now)
}

// MetricDeadline is when the node's NodeMetric becomes too old to use, or the zero time when there is none.
func (in *Input) MetricDeadline() time.Time {
	if in.Metric == nil || in.Metric.Status.UpdateTime == nil {
		return time.Time{}
	}
	return in.Metric.Status.UpdateTime.Add(time.Duration(ptr.Deref(in.Strategy.DegradeTimeMinutes, 0)) * time.Minute)
}

// MetricUsableFrom is when the node's NodeMetric stops being stamped further ahead of the clock than MaxClockSkew
// (a time already past for a report that is not ahead), or the zero time when there is none.
func (in *Input) MetricUsableFrom() time.Time {
	if in.Metric == nil || in.Metric.Status.UpdateTime == nil {
		return time.Time{}
	}
	return in.Metric.Status.UpdateTime.Add(-MaxClockSkew)
}
