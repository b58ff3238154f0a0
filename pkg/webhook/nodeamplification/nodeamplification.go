package nodeamplification

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Path is where the webhook is served; config/webhook/nodeamplification.yaml points the API server at it.
const Path = "/mutate-node-status-amplification"

// Mutator amplifies the allocatable of Node status updates. It never refuses an update: one it cannot handle (an
// annotation that does not parse) is admitted unchanged with a warning.
type Mutator struct{}

var _ admission.Handler = &Mutator{}

// Register serves the webhook on the manager's webhook server.
func Register(mgr ctrl.Manager) {
	mgr.GetWebhookServer().Register(Path, &admission.Webhook{Handler: &Mutator{}, RecoverPanic: ptr.To(true)})
}

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update || req.Kind.Kind != "Node" {
		return admission.Allowed("")
	}
	node, old := &corev1.Node{}, &corev1.Node{}
	if err := json.Unmarshal(req.Object.Raw, node); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the node: %w", err))
	}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the node as it was: %w", err))
	}
	before := node.DeepCopy()
	changed, err := Amplify(old, node)
	if err != nil {
		log.FromContext(ctx).Error(err, "not amplifying the allocatable of a node", "node", node.Name)
		return admission.Allowed("").WithWarnings(fmt.Sprintf("node %s: allocatable not amplified: %v", node.Name, err))
	}
	if !changed {
		return admission.Allowed("")
	}
	return admission.Patched("", patch(before, node)...)
}

// Amplify sets node's allocatable cpu and memory to its raw allocatable times the node's amplification ratios, and
// says whether it changed node. old is the node before the update (nil for none). As Koordinator's node webhook:
//
//   - no ratio annotation (amplification turned off) with raw values saved: each saved resource goes back to its
//     raw value, unless the update changes it (the kubelet wrote its own value), and the raw annotation is dropped
//     in the same write. Koordinator only drops the annotation and leaves the amplified value until the kubelet's
//     next write; a ratio set again before that write would then save the amplified value as raw and amplify it
//     twice;
//   - the raw allocatable of cpu and of memory, each on its own, is taken from the update when the node has none
//     saved for it yet, or when the update changes it (the kubelet wrote its own value: a reservation changed, or
//     it wrote back over the amplified one); otherwise the saved value stands, and the update's is the amplified
//     one. Koordinator takes both again when either changes, which saves the amplified value of the other as raw
//     when an update carries only one;
//   - a ratio of at most 1, or one for a resource the raw allocatable lacks, leaves that resource as it is.
//
// A node whose update leaves its allocatable at exactly the amplified value cannot be told from one the kubelet
// set to that value: the saved raw value then stands until the kubelet's value differs.
func Amplify(old, node *corev1.Node) (bool, error) {
	if _, ok := node.Annotations[slov1alpha1.AnnotationResourceAmplificationRatio]; !ok {
		return restore(old, node), nil
	}
	if node.Status.Allocatable == nil {
		return false, nil
	}
	ratios, err := slov1alpha1.AmplificationRatios(node.Annotations)
	if err != nil {
		return false, err
	}
	raw, err := slov1alpha1.RawAllocatableOf(node.Annotations)
	if err != nil {
		return false, err
	}
	changed := false
	fresh := corev1.ResourceList{}
	for _, r := range slov1alpha1.AmplifiedResources {
		q, ok := node.Status.Allocatable[r]
		saved, wasSaved := raw[r]
		switch {
		case !ok:
		case !wasSaved || allocatableChanged(old, node, r):
			fresh[r] = q
		default:
			fresh[r] = saved
		}
	}
	if len(fresh) > 0 {
		b, err := json.Marshal(fresh)
		if err != nil {
			return false, fmt.Errorf("encoding the raw allocatable: %w", err)
		}
		if node.Annotations[slov1alpha1.AnnotationRawAllocatable] != string(b) {
			node.Annotations[slov1alpha1.AnnotationRawAllocatable] = string(b)
			changed = true
		}
	}
	raw = fresh
	for _, r := range slov1alpha1.AmplifiedResources {
		ratio, ok := ratios[r]
		q, has := raw[r]
		if !ok || !has {
			continue
		}
		want := slov1alpha1.Amplify(q, r, ratio)
		if cur, ok := node.Status.Allocatable[r]; !ok || cur.Cmp(want) != 0 {
			node.Status.Allocatable[r] = want
			changed = true
		}
	}
	return changed, nil
}

// allocatableChanged says whether the update changes the allocatable of r.
func allocatableChanged(old, node *corev1.Node, r corev1.ResourceName) bool {
	if old == nil {
		return false
	}
	o, hadOld := old.Status.Allocatable[r]
	n, hasNew := node.Status.Allocatable[r]
	return hadOld != hasNew || (hadOld && o.Cmp(n) != 0)
}

// restore undoes the amplification of a node whose ratio annotation is gone: allocatable cpu and memory back to the
// saved raw values (except a resource the update changes: the kubelet's new value stands) and the raw annotation
// dropped. A raw annotation that does not parse is dropped all the same: it holds nothing to go back to, and the
// kubelet's next write brings its own values back.
func restore(old, node *corev1.Node) bool {
	if _, saved := node.Annotations[slov1alpha1.AnnotationRawAllocatable]; !saved {
		return false
	}
	raw, _ := slov1alpha1.RawAllocatableOf(node.Annotations) // nil when it does not parse: nothing to restore
	delete(node.Annotations, slov1alpha1.AnnotationRawAllocatable)
	for _, r := range slov1alpha1.AmplifiedResources {
		q, wasSaved := raw[r]
		cur, has := node.Status.Allocatable[r]
		if !wasSaved || !has || allocatableChanged(old, node, r) || cur.Cmp(q) == 0 {
			continue
		}
		node.Status.Allocatable[r] = q
	}
	return true
}
