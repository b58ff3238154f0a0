package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxResourceExplanationSize bounds the AnnotationResourceExplanation value ParseResourceExplanation decodes: the
// API server keeps all the annotations of an object within 256 KiB together, and gleaner-manager writes 2 to 5 KiB.
const MaxResourceExplanationSize = 256 << 10

// ParseResourceExplanation decodes the value of a node's AnnotationResourceExplanation, the one reader of it for
// gleaner-manager and kubectl glean. A value above MaxResourceExplanationSize, or one that is not a single JSON
// object, is an error; unknown fields are ignored, so that an older kubectl glean reads what a newer manager wrote.
func ParseResourceExplanation(value string) (NodeResourceExplanation, error) {
	if len(value) > MaxResourceExplanationSize {
		return NodeResourceExplanation{}, fmt.Errorf("%d bytes, more than the %d an explanation may have", len(value), MaxResourceExplanationSize)
	}
	if t := bytes.TrimSpace([]byte(value)); len(t) == 0 || t[0] != '{' {
		return NodeResourceExplanation{}, fmt.Errorf("%.40q is not a JSON object", value)
	}
	var exp NodeResourceExplanation
	if err := json.Unmarshal([]byte(value), &exp); err != nil {
		return NodeResourceExplanation{}, fmt.Errorf("not a JSON explanation: %w", err)
	}
	return exp, nil
}
