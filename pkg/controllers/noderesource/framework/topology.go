package framework

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gleaner-sh/gleaner/pkg/nrt"
)

// TopologyGVK is the kind of the NodeResourceTopology objects (topology.node.k8s.io/v1alpha2) that topology-aware
// node agents, gleaner-agent among them, publish, one per node, named after it. Gleaner reads and writes them as
// unstructured objects so that a cluster without that CRD costs nothing.
var TopologyGVK = nrt.GVK

// Topology is a node's NUMA zones.
type Topology struct {
	// Zones are the zones of type Node (NUMA nodes), sorted by name.
	Zones []Zone
	// Object is the NodeResourceTopology as read, for plugins that write zone resources back.
	Object *unstructured.Unstructured
}

// Zone is one NUMA zone.
type Zone struct {
	// Name is the zone's name, such as node-0.
	Name string
	// Capacity is each resource's capacity in the zone.
	Capacity corev1.ResourceList
	// Allocatable is each resource's allocatable in the zone.
	Allocatable corev1.ResourceList
}

// NewTopologyObject returns an empty unstructured NodeResourceTopology for reading into.
func NewTopologyObject() *unstructured.Unstructured { return nrt.New() }

// TopologyFrom extracts the NUMA zones of a NodeResourceTopology.
func TopologyFrom(u *unstructured.Unstructured) (*Topology, error) {
	obj, err := nrt.Decode(u)
	if err != nil {
		return nil, err
	}
	t := &Topology{Object: u}
	for _, z := range obj.Zones {
		if z.Type != nrt.ZoneTypeNode {
			continue
		}
		zone := Zone{Name: z.Name, Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}}
		for _, r := range z.Resources {
			zone.Capacity[corev1.ResourceName(r.Name)] = r.Capacity
			zone.Allocatable[corev1.ResourceName(r.Name)] = r.Allocatable
		}
		t.Zones = append(t.Zones, zone)
	}
	sort.Slice(t.Zones, func(i, j int) bool { return t.Zones[i].Name < t.Zones[j].Name })
	return t, nil
}

// UpdateTopologyZones writes the named resources of zones into the node's NodeResourceTopology (capacity,
// allocatable and available all set to the value; a resource missing from a zone's list is removed from it), and
// sends the update only when something changed. u is the object as read; it is not modified.
func UpdateTopologyZones(ctx context.Context, c client.Client, u *unstructured.Unstructured, zones map[string]corev1.ResourceList, names ...corev1.ResourceName) error {
	updated := u.DeepCopy()
	rawZones, _, err := unstructured.NestedSlice(updated.Object, "zones")
	if err != nil {
		return fmt.Errorf("reading zones of NodeResourceTopology %s: %w", u.GetName(), err)
	}
	changed := false
	for i, rz := range rawZones {
		zone, ok := rz.(map[string]any)
		if !ok {
			continue
		}
		name, _ := zone["name"].(string)
		want := zones[name]
		resources, _ := zone["resources"].([]any)
		var kept []any
		for _, rr := range resources {
			r, _ := rr.(map[string]any)
			if r != nil && isOneOf(r["name"], names) {
				continue
			}
			kept = append(kept, rr)
		}
		for _, n := range names {
			if q, ok := want[n]; ok {
				kept = append(kept, nrt.ResourceMap(nrt.ResourceInfo{Name: string(n), Capacity: q, Allocatable: q, Available: q}))
			}
		}
		if !equalResources(resources, kept) {
			changed = true
		}
		zone["resources"] = kept
		rawZones[i] = zone
	}
	if !changed {
		return nil
	}
	if err := unstructured.SetNestedSlice(updated.Object, rawZones, "zones"); err != nil {
		return fmt.Errorf("setting zones of NodeResourceTopology %s: %w", u.GetName(), err)
	}
	if err := c.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating NodeResourceTopology %s: %w", u.GetName(), err)
	}
	return nil
}

func isOneOf(v any, names []corev1.ResourceName) bool {
	s, _ := v.(string)
	for _, n := range names {
		if s == string(n) {
			return true
		}
	}
	return false
}

func equalResources(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(l []any) map[string]string {
		m := map[string]string{}
		for _, x := range l {
			r, _ := x.(map[string]any)
			name, _ := r["name"].(string)
			m[name] = fmt.Sprint(r["capacity"], "/", r["allocatable"], "/", r["available"])
		}
		return m
	}
	ka, kb := key(a), key(b)
	for k, v := range ka {
		if kb[k] != v {
			return false
		}
	}
	return true
}
