package framework

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// NodeResource is the merged result of every CalculatePlugin for one node: what the Prepare stage writes.
type NodeResource struct {
	// Resources maps a resource to its value; nil means the resource is to be removed.
	Resources map[corev1.ResourceName]*resource.Quantity
	// ZoneResources maps a NUMA zone to its resources.
	ZoneResources map[string]corev1.ResourceList
	// Messages say, per resource, how its value came about or why it was removed.
	Messages map[corev1.ResourceName]string
	// Derivations explain each resource, in the order the items were set.
	Derivations []slov1alpha1.ResourceDerivation
	// Annotations maps a node annotation to its value, nil to remove it; annotations not in it are left alone.
	Annotations map[string]*string
	// AnnotationDerivations explain each annotation the AnnotatePlugins returned, or left as it was after an error.
	AnnotationDerivations []slov1alpha1.AnnotationDerivation
	// Urgent maps a resource whose value must reach the node at once to the reason (ResourceItem.Urgent).
	Urgent map[corev1.ResourceName]string
}

// NewNodeResource returns a NodeResource holding items.
func NewNodeResource(items ...ResourceItem) *NodeResource {
	nr := &NodeResource{
		Resources:     map[corev1.ResourceName]*resource.Quantity{},
		ZoneResources: map[string]corev1.ResourceList{},
		Messages:      map[corev1.ResourceName]string{},
		Annotations:   map[string]*string{},
		Urgent:        map[corev1.ResourceName]string{},
	}
	nr.Set(items...)
	return nr
}

// Set merges items into nr; an item for a resource already present replaces it.
func (nr *NodeResource) Set(items ...ResourceItem) {
	for _, it := range items {
		if it.Reset || it.Quantity == nil {
			nr.Resources[it.Name] = nil
		} else {
			q := it.Quantity.DeepCopy()
			nr.Resources[it.Name] = &q
		}
		for zone, q := range it.ZoneQuantity {
			if nr.ZoneResources[zone] == nil {
				nr.ZoneResources[zone] = corev1.ResourceList{}
			}
			nr.ZoneResources[zone][it.Name] = q.DeepCopy()
		}
		nr.Messages[it.Name] = it.Message
		if it.Urgent != "" {
			nr.Urgent[it.Name] = it.Urgent
		} else {
			delete(nr.Urgent, it.Name)
		}
		if it.Derivation != nil {
			nr.Derivations = slices.DeleteFunc(nr.Derivations, func(d slov1alpha1.ResourceDerivation) bool {
				return d.Resource == it.Name
			})
			nr.Derivations = append(nr.Derivations, *it.Derivation.DeepCopy())
		}
	}
}

// SetAnnotations merges the items of the AnnotatePlugin plugin into nr.
func (nr *NodeResource) SetAnnotations(plugin string, items ...AnnotationItem) {
	for _, it := range items {
		var v *string
		if it.Value != nil {
			v = ptr.To(*it.Value)
		}
		nr.Annotations[it.Key] = v
		nr.AnnotationDerivations = slices.DeleteFunc(nr.AnnotationDerivations, func(d slov1alpha1.AnnotationDerivation) bool {
			return d.Annotation == it.Key
		})
		nr.AnnotationDerivations = append(nr.AnnotationDerivations, slov1alpha1.AnnotationDerivation{
			Annotation: it.Key, Plugin: plugin, Value: v, Source: it.Source, Reason: it.Reason,
		})
	}
}

// Annotation returns the value an AnnotatePlugin gave a node annotation in this reconcile, else the node's own.
func (nr *NodeResource) Annotation(node *corev1.Node, key string) (string, bool) {
	if v, ok := nr.Annotations[key]; ok {
		if v == nil {
			return "", false
		}
		return *v, true
	}
	v, ok := node.Annotations[key]
	return v, ok
}

// PrepareAnnotations writes nr.Annotations into node: a value is set, nil removes the annotation.
func PrepareAnnotations(node *corev1.Node, nr *NodeResource) {
	for key, v := range nr.Annotations {
		if v == nil {
			delete(node.Annotations, key)
			continue
		}
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[key] = *v
	}
}

// AnnotationsDiffer says which annotation of nr differs between oldNode and newNode, or "" when none does.
func AnnotationsDiffer(oldNode, newNode *corev1.Node, nr *NodeResource) string {
	keys := make([]string, 0, len(nr.Annotations))
	for key := range nr.Annotations {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		o, hadOld := oldNode.Annotations[key]
		n, hasNew := newNode.Annotations[key]
		switch {
		case hadOld && !hasNew:
			return "annotation " + key + " removed"
		case !hadOld && hasNew:
			return "annotation " + key + " set to " + n
		case o != n:
			return "annotation " + key + " changed from " + o + " to " + n
		}
	}
	return ""
}

// UrgentChange says why the node must be written now because the value of one of nr's urgent resources
// (ResourceItem.Urgent) differs between oldNode and newNode at all, or "" when none does.
func (nr *NodeResource) UrgentChange(oldNode, newNode *corev1.Node) string {
	for _, name := range sortedNames(nr.Urgent) {
		if moved := changed(name, oldNode, newNode); moved != "" {
			return moved + ", at once: " + nr.Urgent[name]
		}
	}
	return ""
}

// UrgencyOver says why the node must be written now because a resource that was urgent at the node's last write
// (before: the Urgent reasons of that write) no longer is and its value differs at all: what held the value there
// (memory pressure) is over, and the value must not linger until the next forced update. "" when none does.
func (nr *NodeResource) UrgencyOver(before map[corev1.ResourceName]string, oldNode, newNode *corev1.Node) string {
	for _, name := range sortedNames(before) {
		if _, still := nr.Urgent[name]; still {
			continue
		}
		if moved := changed(name, oldNode, newNode); moved != "" {
			return moved + ", at once: over (" + before[name] + ")"
		}
	}
	return ""
}

// sortedNames are the keys of m in order.
func sortedNames(m map[corev1.ResourceName]string) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// changed says how the allocatable name moved between oldNode and newNode, or "" when it did not.
func changed(name corev1.ResourceName, oldNode, newNode *corev1.Node) string {
	o, hadOld := oldNode.Status.Allocatable[name]
	n, hasNew := newNode.Status.Allocatable[name]
	if hadOld == hasNew && (!hadOld || o.Cmp(n) == 0) {
		return ""
	}
	return fmt.Sprintf("%s changed from %s to %s", name, quantityOrNone(o, hadOld), quantityOrNone(n, hasNew))
}

// quantityOrNone prints q, or "none" for a resource the node does not have.
func quantityOrNone(q resource.Quantity, ok bool) string {
	if !ok {
		return "none"
	}
	return q.String()
}

// Get returns the value of a resource and whether nr has it; a resource to be removed is (nil, true).
func (nr *NodeResource) Get(name corev1.ResourceName) (*resource.Quantity, bool) {
	q, ok := nr.Resources[name]
	return q, ok
}

// PrepareResources writes the named resources of nr into node's capacity and allocatable: a value is set in both
// (an extended resource must be in capacity for the scheduler and kubelet to accept it), a nil value removes it
// from both. Resources nr does not mention are left alone.
func PrepareResources(node *corev1.Node, nr *NodeResource, names ...corev1.ResourceName) {
	for _, name := range names {
		q, ok := nr.Resources[name]
		if !ok {
			continue
		}
		if q == nil {
			delete(node.Status.Capacity, name)
			delete(node.Status.Allocatable, name)
			continue
		}
		if node.Status.Capacity == nil {
			node.Status.Capacity = corev1.ResourceList{}
		}
		if node.Status.Allocatable == nil {
			node.Status.Allocatable = corev1.ResourceList{}
		}
		node.Status.Capacity[name] = q.DeepCopy()
		node.Status.Allocatable[name] = q.DeepCopy()
	}
}

// ResourcesDiffer reports whether any named resource differs enough between oldNode's and newNode's allocatable to
// be written: it appears, disappears, or changes by more than threshold relative to the old value.
func ResourcesDiffer(oldNode, newNode *corev1.Node, threshold float64, names ...corev1.ResourceName) (bool, string) {
	for _, name := range names {
		o, hadOld := oldNode.Status.Allocatable[name]
		n, hasNew := newNode.Status.Allocatable[name]
		switch {
		case hadOld && !hasNew:
			return true, string(name) + " removed"
		case !hadOld && hasNew:
			return true, string(name) + " added"
		case !hadOld:
			continue
		}
		ov, nv := float64(o.Value()), float64(n.Value())
		if ov == nv {
			continue
		}
		if ov == 0 || abs(nv-ov)/ov > threshold {
			return true, string(name) + " changed from " + o.String() + " to " + n.String()
		}
	}
	return false, ""
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
