package qosmanager

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
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
	var tree any
	if err := json.Unmarshal([]byte(raw), &tree); err != nil {
		return nil, err // not reached: raw decoded above
	}
	unknownFields("", tree, reflect.TypeOf(v), &ignored)
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

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unknownFields appends to out the paths, under path, of the members of the decoded JSON val that the Go type t has
// no field for. It descends into objects decoded into structs and arrays decoded into slices; a map takes any
// member, and a type that decodes itself (intstr.IntOrString) is its own judge.
func unknownFields(path string, val any, t reflect.Type, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	switch val := val.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return
		}
		fields := jsonFields(t)
		for name, member := range val {
			p := name
			if path != "" {
				p = path + "." + name
			}
			ft, ok := fields[name]
			if !ok {
				for n, f := range fields {
					if strings.EqualFold(n, name) {
						ft, ok = f, true
						break
					}
				}
			}
			if !ok {
				*out = append(*out, p)
				continue
			}
			unknownFields(p, member, ft, out)
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return
		}
		for i, item := range val {
			unknownFields(fmt.Sprintf("%s[%d]", path, i), item, t.Elem(), out)
		}
	}
}

// jsonFields are the JSON names of struct type t's fields and their types, as encoding/json sees them: exported
// fields by their tag's name (else their Go name), the fields of an embedded struct without a tag name (such as
// `json:",inline"`) as t's own, and none tagged "-".
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for n, sub := range jsonFields(ft) {
				if _, own := out[n]; !own {
					out[n] = sub
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
