package nrt

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVK is the kind of the NodeResourceTopology objects, one per node, named after it.
var GVK = schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}

// ZoneTypeNode is the type of a zone that is a NUMA node; the manager reads only zones of this type.
const ZoneTypeNode = "Node"

// ZoneName is the name of NUMA node id's zone: node-0, node-1, ...
func ZoneName(id int) string { return "node-" + strconv.Itoa(id) }

// Object mirrors the fields of a NodeResourceTopology that Gleaner uses. Zones is the one field the v1alpha2
// schema requires; topologyPolicies is deprecated there in favour of attributes.
type Object struct {
	// Zones are the node's topology zones.
	Zones []Zone `json:"zones"`
}

// Zone is one topology zone.
type Zone struct {
	// Name names the zone, unique within the object (node-0 for NUMA node 0).
	Name string `json:"name"`
	// Type is ZoneTypeNode for a NUMA node; other types (Socket, Core ...) are ignored by Gleaner.
	Type string `json:"type"`
	// Resources are the zone's resources.
	Resources []ResourceInfo `json:"resources,omitempty"`
}

// ResourceInfo is one resource of a zone.
type ResourceInfo struct {
	// Name is the resource's name, such as cpu or memory.
	Name string `json:"name"`
	// Capacity is the zone's total of the resource.
	Capacity resource.Quantity `json:"capacity"`
	// Allocatable is the part of Capacity pods may request.
	Allocatable resource.Quantity `json:"allocatable"`
	// Available is the part of Allocatable that new pods may still request.
	Available resource.Quantity `json:"available"`
}

// New returns an empty unstructured NodeResourceTopology, for reading into or creating.
func New() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	return u
}

// Decode reads the typed fields of a NodeResourceTopology.
func Decode(u *unstructured.Unstructured) (*Object, error) {
	var obj Object
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return nil, fmt.Errorf("decoding NodeResourceTopology %s: %w", u.GetName(), err)
	}
	return &obj, nil
}

// ResourceMap is the unstructured form of r, as the API server stores it (quantities as canonical strings).
func ResourceMap(r ResourceInfo) map[string]any {
	return map[string]any{
		"name": r.Name, "capacity": r.Capacity.String(), "allocatable": r.Allocatable.String(), "available": r.Available.String(),
	}
}
