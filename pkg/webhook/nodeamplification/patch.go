package nodeamplification

import (
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/webhook/fieldpatch"
)

// patch is the JSON patch that takes the node the API server sent (before, as decoded) to what Amplify made of it
// (after), built for the members Amplify changes only: annotations and allocatable. It is never a diff of the
// re-encoded node: that encoding lacks every field newer than this library's Node type, and the diff would remove
// them from the API server's object at each status update.
func patch(before, after *corev1.Node) []jsonpatch.JsonPatchOperation {
	ops := fieldpatch.MapOps("/metadata/annotations", before.Annotations, after.Annotations, fieldpatch.StringEqual, fieldpatch.StringValue)
	return append(ops, fieldpatch.MapOps("/status/allocatable", before.Status.Allocatable, after.Status.Allocatable,
		fieldpatch.QuantityEqual, fieldpatch.QuantityValue)...)
}
