package colocationprofile

import (
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/webhook/fieldpatch"
)

// patch is the JSON patch that takes the pod the API server sent (before, as decoded) to what Translate made of it
// (after), built for the members Translate changes only: labels, annotations, the priority class, priority,
// preemption policy and scheduler name, and the containers' and init containers' requests and limits. It is never
// a diff of the re-encoded pod: that encoding lacks every field newer than this library's Pod type, and the diff
// would remove them from the pod the API server creates.
func patch(before, after *corev1.Pod) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	ops = append(ops, fieldpatch.MapOps("/metadata/labels", before.Labels, after.Labels, fieldpatch.StringEqual, fieldpatch.StringValue)...)
	ops = append(ops, fieldpatch.MapOps("/metadata/annotations", before.Annotations, after.Annotations, fieldpatch.StringEqual, fieldpatch.StringValue)...)
	b, a := &before.Spec, &after.Spec
	ops = append(ops, fieldpatch.StringOp("/spec/priorityClassName", b.PriorityClassName, a.PriorityClassName)...)
	ops = append(ops, fieldpatch.PointerOp("/spec/priority", b.Priority, a.Priority)...)
	ops = append(ops, fieldpatch.PointerOp("/spec/preemptionPolicy", b.PreemptionPolicy, a.PreemptionPolicy)...)
	ops = append(ops, fieldpatch.StringOp("/spec/schedulerName", b.SchedulerName, a.SchedulerName)...)
	for _, cs := range []struct {
		path          string
		before, after []corev1.Container
	}{
		{"/spec/initContainers", b.InitContainers, a.InitContainers},
		{"/spec/containers", b.Containers, a.Containers},
	} {
		if len(cs.before) != len(cs.after) {
			panic(fmt.Sprintf("colocationprofile: Translate changed the number of %s from %d to %d", cs.path, len(cs.before), len(cs.after)))
		}
		for i := range cs.after {
			res := fmt.Sprintf("%s/%d/resources", cs.path, i)
			bres, ares := &cs.before[i].Resources, &cs.after[i].Resources
			ops = append(ops, fieldpatch.MapOps(res+"/requests", bres.Requests, ares.Requests, fieldpatch.QuantityEqual, fieldpatch.QuantityValue)...)
			ops = append(ops, fieldpatch.MapOps(res+"/limits", bres.Limits, ares.Limits, fieldpatch.QuantityEqual, fieldpatch.QuantityValue)...)
		}
	}
	return ops
}
