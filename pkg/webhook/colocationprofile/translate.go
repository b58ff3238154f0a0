package colocationprofile

import (
	"errors"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The batch band of spec.priority (slov1alpha1.PriorityBatch): a profile's priority class must lie in it.
const (
	batchPriorityMin = 5000
	batchPriorityMax = 5999
)

// errNoPriorityClass is Translate's error when the profile's PriorityClass does not exist.
var errNoPriorityClass = errors.New("priority class not found")

// Sampled reports whether a profile with this probability (percent, 0-100) applies to a pod: a hash of the
// profile's name, the namespace and key, where key is the pod's name, or, for a pod whose name the API server has
// not generated yet, its admission request's UID. A pod created again under the same name gets the same answer.
func Sampled(profile, namespace, key string, probability int32) bool {
	if probability >= 100 {
		return true
	}
	if probability <= 0 {
		return false
	}
	h := fnv.New64a()
	// The NUL separators keep ("a", "bc") and ("ab", "c") apart.
	_, _ = h.Write([]byte(profile + "\x00" + namespace + "\x00" + key))
	return h.Sum64()%100 < uint64(probability)
}

// markProfile sets the label the profile's status counts its pods by. A profile created before the CRD bounded
// names to a label value's 63 characters keeps making batch pods, which its status cannot count.
func markProfile(labels map[string]string, profile string) {
	if len(validation.IsValidLabelValue(profile)) == 0 {
		labels[configv1alpha1.LabelColocationProfile] = profile
	}
}

// Translate makes pod a batch pod as profile says, in place: the QoS class label (and the priority-class labels
// the pod already carries, set to the batch band), the priority class pc with its priority and preemption policy,
// the scheduler name, the profile's labels and annotations, the label configv1alpha1.LabelColocationProfile set to
// the profile's name (where it can be a label value), and every container's and init container's cpu and memory requests and limits moved to
// kubernetes.io/batch-cpu (integer millicores) and kubernetes.io/batch-memory (bytes). pc is the PriorityClass the
// profile names, nil when it does not exist.
//
// A pod that cannot be translated gets an error saying why and is left as it was: pod-level resources (they can
// only hold cpu and memory), a container that asks for both cpu and batch-cpu (or memory and batch-memory), a
// priority class that is missing or outside the batch band, or a label or annotation the API server would refuse.
// The last two are *ProfileErrors, as Check returns them: no pod of that profile can pass.
func Translate(pod *corev1.Pod, profile *configv1alpha1.ColocationProfile, pc *schedulingv1.PriorityClass) error {
	spec := profile.Spec
	if err := checkPriorityClass(priorityClassName(spec), pc); err != nil {
		return err
	}
	if err := checkMetadata(profile); err != nil {
		return err
	}
	if r := pod.Spec.Resources; r != nil && (hasCPUOrMemory(r.Requests) || hasCPUOrMemory(r.Limits)) {
		return errors.New("it has pod-level resources (spec.resources), which cannot be expressed in batch resources")
	}
	out := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if err := toBatch(c.Resources.Requests); err != nil {
				return fmt.Errorf("container %q: requests: %w", c.Name, err)
			}
			if err := toBatch(c.Resources.Limits); err != nil {
				return fmt.Errorf("container %q: limits: %w", c.Name, err)
			}
		}
	}
	qos := spec.QoSClass
	if qos == "" {
		qos = slov1alpha1.QoSBE
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[slov1alpha1.LabelQoSClass] = string(qos)
	// A pod carrying the labels of the system the seeds describe keeps them, agreeing with the ones set here.
	if _, ok := out.Labels[slov1alpha1.LabelQoSClassAlias]; ok {
		out.Labels[slov1alpha1.LabelQoSClassAlias] = string(qos)
	}
	// A priority-class label overrides spec.priority (slov1alpha1.ClassOf): one that says prod would keep the pod
	// out of the batch band whatever its priority.
	if _, ok := out.Labels[slov1alpha1.LabelPriorityClass]; ok {
		out.Labels[slov1alpha1.LabelPriorityClass] = string(slov1alpha1.PriorityBatch)
	}
	if _, ok := out.Labels[slov1alpha1.LabelPriorityClassAlias]; ok {
		out.Labels[slov1alpha1.LabelPriorityClassAlias] = "koord-batch"
	}
	for k, v := range spec.Labels {
		out.Labels[k] = v
	}
	// Set after the profile's labels, which may only repeat it.
	markProfile(out.Labels, profile.Name)
	if len(spec.Annotations) > 0 && out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, v := range spec.Annotations {
		out.Annotations[k] = v
	}
	// The API server's Priority admission plugin resolved the pod's former class before this webhook ran, and runs
	// again after it (built-in mutating plugins are re-run when a webhook changes the object); it refuses a pod whose
	// priority or preemption policy differ from what the class gives. So both are set here to the class's values.
	out.Spec.PriorityClassName = pc.Name
	out.Spec.Priority = &pc.Value
	out.Spec.PreemptionPolicy = pc.PreemptionPolicy
	if spec.SchedulerName != "" {
		out.Spec.SchedulerName = spec.SchedulerName
	}
	*pod = *out
	return nil
}

func priorityClassName(spec configv1alpha1.ColocationProfileSpec) string {
	if spec.PriorityClassName == "" {
		return configv1alpha1.DefaultPriorityClassName
	}
	return spec.PriorityClassName
}

func hasCPUOrMemory(l corev1.ResourceList) bool {
	_, cpu := l[corev1.ResourceCPU]
	_, mem := l[corev1.ResourceMemory]
	return cpu || mem
}

// toBatch moves cpu to batch-cpu (millicores, rounded up to an integer) and memory to batch-memory (bytes,
// rounded up) within one requests or limits list.
func toBatch(l corev1.ResourceList) error {
	moves := []struct {
		from, to corev1.ResourceName
		value    func(resource.Quantity) int64
	}{
		{corev1.ResourceCPU, slov1alpha1.BatchCPU, func(q resource.Quantity) int64 { return q.MilliValue() }},
		{corev1.ResourceMemory, slov1alpha1.BatchMemory, func(q resource.Quantity) int64 { return q.Value() }},
	}
	for _, m := range moves {
		if _, ok := l[m.from]; !ok {
			continue
		}
		if _, ok := l[m.to]; ok {
			return fmt.Errorf("it asks for both %s and %s", m.from, m.to)
		}
	}
	for _, m := range moves {
		q, ok := l[m.from]
		if !ok {
			continue
		}
		l[m.to] = *resource.NewQuantity(m.value(q), resource.DecimalSI)
		delete(l, m.from)
	}
	return nil
}
