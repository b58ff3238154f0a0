package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// Node annotations that reserve part of a node for the system, outside what the kubelet reserves. Their value is a
// JSON NodeReservation, such as {"resources": {"cpu": "1", "memory": "2Gi"}} or {"reservedCPUs": "0-1"}. When both
// are set, AnnotationNodeReservation is used; one that does not decode is ignored as if it were absent (the other
// then applies), and the node's explanation and a Warning event say why.
const (
	// AnnotationNodeReservation reserves resources of a node.
	AnnotationNodeReservation = "gleaner.sh/node-reservation"
	// AnnotationNodeReservationAlias is Koordinator's node-reservation annotation, with the
	// same format; honoured when AnnotationNodeReservation is absent or ignored.
	AnnotationNodeReservationAlias = "node.koordinator.sh/reservation"
)

// NodeReservation is the value of a node-reservation annotation.
type NodeReservation struct {
	// Resources are the reserved amounts, such as {"cpu": "1", "memory": "2Gi"}.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// ReservedCPUs is a Linux CPU list ("0-3", "0,2,4-5") of cores kept for the system. It counts as that many
	// cores and takes the place of Resources' cpu.
	// +optional
	ReservedCPUs string `json:"reservedCPUs,omitempty"`
	// ApplyPolicy says how Koordinator's scheduler applies the reservation ("Default" or
	// "ReservedCPUsOnly"). It is accepted for compatibility; the batch calculation honours the reservation either
	// way, as that system's does.
	// +optional
	ApplyPolicy string `json:"applyPolicy,omitempty"`
}

// ParseNodeReservation decodes a node-reservation annotation's value and returns what it reserves. Unknown fields,
// negative amounts and a CPU list that does not parse are errors: a reservation that is silently half read would
// publish more batch capacity than its author meant.
func ParseNodeReservation(value string) (corev1.ResourceList, error) {
	var r NodeReservation
	if !json.Valid([]byte(value)) {
		// Unmarshal says where the syntax breaks; the decoder below would stop after the first value.
		err := json.Unmarshal([]byte(value), &r)
		return nil, fmt.Errorf("decoding %q: not one JSON object: %w", value, err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", value, err)
	}
	out := corev1.ResourceList{}
	for name, q := range r.Resources {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resources: %s is negative (%s)", name, q.String())
		}
		out[name] = q
	}
	if r.ReservedCPUs != "" {
		cpus, err := cpulist.Parse(r.ReservedCPUs)
		if err != nil {
			return nil, fmt.Errorf("reservedCPUs is not a CPU list such as 0-3,8: %w", err)
		}
		out[corev1.ResourceCPU] = resource.MustParse(strconv.Itoa(cpus.Size()))
	}
	return out, nil
}

// NodeReservationOf returns what a node's node-reservation annotations reserve, and the annotation it came from
// ("" when none applies). An annotation with an empty value counts as absent. Each one that is set but does not parse is ignored and its error returned in
// problems, so that the caller can say why.
func NodeReservationOf(node *corev1.Node) (reserved corev1.ResourceList, from string, problems []error) {
	for _, key := range []string{AnnotationNodeReservation, AnnotationNodeReservationAlias} {
		v := node.Annotations[key]
		if strings.TrimSpace(v) == "" {
			continue // absent, or emptied: `kubectl annotate node N KEY=` removes a reservation
		}
		r, err := ParseNodeReservation(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("node annotation %s ignored: %w", key, err))
			continue
		}
		return r, key, problems
	}
	return nil, "", problems
}
