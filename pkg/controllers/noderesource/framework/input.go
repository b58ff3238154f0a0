package framework

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// PodUsage returns a pod's measured usage from the NodeMetric, matched by UID (or by namespace and name when the
// agent reported no UID), and whether the NodeMetric has it.
func (in *Input) PodUsage(pod *corev1.Pod) (corev1.ResourceList, bool) {
	if in.Metric == nil {
		return nil, false
	}
	if in.podUsage == nil {
		in.podUsage = make(map[string]corev1.ResourceList, 2*len(in.Metric.Status.PodsMetric))
		for _, pm := range in.Metric.Status.PodsMetric {
			if pm.UID != "" {
				in.podUsage["uid/"+pm.UID] = pm.Usage
			}
			in.podUsage["name/"+pm.Namespace+"/"+pm.Name] = pm.Usage
		}
	}
	if u, ok := in.podUsage["uid/"+string(pod.UID)]; ok {
		return u, true
	}
	u, ok := in.podUsage["name/"+pod.Namespace+"/"+pod.Name]
	return u, ok
}

// PodClass is the pod's priority class and QoS class (slov1alpha1.ClassOf), decided once per reconcile.
func (in *Input) PodClass(pod *corev1.Pod) slov1alpha1.PodClass {
	if in.podClasses == nil {
		in.podClasses = make(map[types.UID]slov1alpha1.PodClass, len(in.Pods))
	}
	if c, ok := in.podClasses[pod.UID]; ok {
		return c
	}
	c := slov1alpha1.ClassOf(pod)
	in.podClasses[pod.UID] = c
	return c
}

// MetricProblem says why the node's NodeMetric cannot be used for a calculation, or "" when it can: it must exist,
// carry node usage, and be younger than the strategy's degradeTimeMinutes.
func (in *Input) MetricProblem() string {
	m := in.Metric
	switch {
	case m == nil:
		return "NodeMetric " + in.Node.Name + " does not exist"
	case m.Status.UpdateTime == nil || m.Status.NodeMetric == nil:
		return "NodeMetric " + in.Node.Name + " has no usage reported yet"
	}
	limit := time.Duration(ptr.Deref(in.Strategy.DegradeTimeMinutes, 0)) * time.Minute
	if age := in.Now.Sub(m.Status.UpdateTime.Time); age > limit {
		return fmt.Sprintf("NodeMetric %s was last updated %s ago, more than degradeTimeMinutes (%s)",
			in.Node.Name, age.Truncate(time.Second), limit)
	}
	return ""
}

// MetricDeadline is when the node's NodeMetric becomes too old to use, or the zero time when there is none.
func (in *Input) MetricDeadline() time.Time {
	if in.Metric == nil || in.Metric.Status.UpdateTime == nil {
		return time.Time{}
	}
	return in.Metric.Status.UpdateTime.Add(time.Duration(ptr.Deref(in.Strategy.DegradeTimeMinutes, 0)) * time.Minute)
}
