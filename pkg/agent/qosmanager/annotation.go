package qosmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/gleaner-sh/gleaner/internal/jsonfields"
)

// ReasonAnnotationFieldsIgnored is the reason of the Warning event on a pod whose Koordinator QoS annotation is used
// with some of its fields left out (fields Gleaner does not have); the rest of the value applies.
const ReasonAnnotationFieldsIgnored = "AnnotationFieldsIgnored"

// koordinatorPrefix starts the keys of Koordinator's pod annotations, which Gleaner reads as aliases of its own.
const koordinatorPrefix = "koordinator.sh/"

// DecodeAnnotation decodes raw, the value of a pod's QoS annotation key, into v, a pointer to the Go struct of the
// annotation's JSON object. raw must hold one JSON value and nothing after it. How strict it is depends on whose
// key it is:
//
//   - Gleaner's own keys (gleaner.sh/...) are strict: a field v has no place for is an error. In Gleaner's own
//     format such a field can only be a typo, and applying the rest of a value with a typo in it ({"enable": true,
//     "groupIdenity": -1}) would apply something the pod did not ask for.
//   - Koordinator's keys (koordinator.sh/...) are read as Koordinator reads them (json.Unmarshal): a field v has
//     no place for is skipped and named in ignored, as a path such as "blocks[0].ioCfg.readLatency", sorted, so
//     that the caller can say once that it was not read. A value Koordinator accepts is then never refused for a
//     field Gleaner lacks: Koordinator's fields for features Gleaner does not build, and those of later Koordinator
//     releases.
//
// Field names match as encoding/json matches them, exactly or else ignoring case. The error is encoding/json's, or
// says what follows the value; the caller names the annotation.
func DecodeAnnotation(key, raw string, v any) (ignored []string, err error) {
	strict := !strings.HasPrefix(key, koordinatorPrefix)
	dec := json.NewDecoder(strings.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more follows the JSON value")
	}
	if strict {
		return nil, nil
	}
	for _, f := range jsonfields.Lint([]byte(raw), reflect.TypeOf(v)) {
		if f.Unknown {
			ignored = append(ignored, f.Path)
		}
	}
	slices.Sort(ignored)
	return ignored, nil
}

// IgnoredFields is the message that says a pod's annotation key was used without its fields ignored (as
// DecodeAnnotation names them); "" when there are none.
func IgnoredFields(key string, ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("annotation %s: Gleaner does not read %s, ignored", key, strings.Join(ignored, ", "))
}
