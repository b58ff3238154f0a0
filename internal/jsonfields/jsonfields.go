// Package jsonfields reports what encoding/json does silently when it decodes a JSON object into a Go type:
// unknown fields it ignores, fields it matches only ignoring case, fields given more than once. Gleaner reads
// Koordinator's JSON (the slo-controller-config keys, the koordinator.sh/* pod annotations) as encoding/json does,
// which is how Koordinator reads it, and says with these findings what it left out.
package jsonfields

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Field names are matched the way encoding/json matches them, which is how Koordinator reads the
// same JSON: exactly, or else ignoring case ("cpuQoS" sets cpuQOS, "CPUEvictTimeWindowSeconds" sets
// cpuEvictTimeWindowSeconds). Unknown fields are ignored and a field given twice keeps its last value. A value
// written for that system therefore works unchanged; Lint reports each of these cases as a Finding, so that a
// typo is visible (admission warnings, a Warning event) instead of silently doing nothing.
//
// Why a walker of our own rather than sigs.k8s.io/json's strict decoding (UnmarshalStrict with
// DisallowUnknownFields and DisallowDuplicateFields), which reports unknown and duplicate fields with their paths:
// that decoding is case-sensitive only. A key matched only ignoring case ("ClusterStrategy") comes back as an
// unknown field, its value is skipped, so a typo inside it goes unreported, and a second spelling of a field
// ("cpuQOS" then "cpuQoS") is "unknown" rather than the repeat whose last value encoding/json applies. Telling
// those cases apart needs the Go type at each path anyway, which is what this walker is; keeping encoding/json's
// matching is a compatibility promise (DESIGN.md), so the walker stays.

// Finding is a note about a key that does not stop it from applying.
type Finding struct {
	// Path is where in the JSON the finding is, such as "clusterStrategy.lsrClass.cpuQoS".
	Path string
	// Message says what was found and what Gleaner did with it.
	Message string
	// Unknown is whether the field is one the type has no place for (its value was ignored).
	Unknown bool
}

func (f Finding) String() string { return f.Path + ": " + f.Message }

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Lint walks data, which encoding/json has already decoded into a value of type t without error, and reports
// unknown fields, fields matched only ignoring case, and fields given more than once, in the order they appear.
func Lint(data []byte, t reflect.Type) []Finding {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []Finding
	// data decoded cleanly, so the only error walk can meet is a programmer's error in walk; the findings so far
	// are still right.
	_ = walkValue(dec, t, "", &out)
	return out
}

// walkValue consumes one JSON value from dec, which should decode into t.
func walkValue(dec *json.Decoder, t reflect.Type, path string, out *[]Finding) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) ||
		t.Kind() == reflect.Interface {
		return skipValue(dec)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		switch t.Kind() {
		case reflect.Struct:
			return walkObject(dec, Fields(t), path, out)
		case reflect.Map:
			return walkMap(dec, t.Elem(), path, out)
		default:
			return skipRest(dec)
		}
	case json.Delim('['):
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return skipRest(dec)
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	return nil
}

func walkObject(dec *json.Decoder, fields map[string]reflect.Type, path string, out *[]Finding) error {
	seen := map[string]string{} // canonical field name (or lower-cased unknown key) -> first spelling
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := joinPath(path, key)
		name, ft, exact := lookupField(fields, key)
		seenAs := name
		if ft == nil {
			seenAs = strings.ToLower(key)
		}
		if first, dup := seen[seenAs]; dup {
			*out = append(*out, Finding{Path: p, Message: fmt.Sprintf("given again (first as %q); the last value wins", first)})
		} else {
			seen[seenAs] = key
		}
		switch {
		case ft == nil:
			*out = append(*out, Finding{Path: p, Message: "unknown field, ignored", Unknown: true})
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		case !exact:
			*out = append(*out, Finding{Path: p, Message: fmt.Sprintf("matched field %q ignoring case; write %q", name, name)})
		}
		if err := walkValue(dec, ft, p, out); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	return err
}

func walkMap(dec *json.Decoder, elem reflect.Type, path string, out *[]Finding) error {
	seen := map[string]bool{} // map keys are matched exactly
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := joinPath(path, key)
		if seen[key] {
			*out = append(*out, Finding{Path: p, Message: "given again; the last value wins"})
		}
		seen[key] = true
		if err := walkValue(dec, elem, p, out); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	return err
}

// lookupField finds key among fields exactly, else ignoring case as encoding/json does.
func lookupField(fields map[string]reflect.Type, key string) (name string, t reflect.Type, exact bool) {
	if t, ok := fields[key]; ok {
		return key, t, true
	}
	for n, t := range fields {
		if strings.EqualFold(n, key) {
			return n, t, false
		}
	}
	return "", nil, false
}

// Fields returns the JSON names of t's fields and their types, with the fields of embedded structs promoted
// the way encoding/json promotes them (a shallower field wins).
func Fields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for _, et := range embedded {
		for n, ft := range Fields(et) {
			if _, ok := fields[n]; !ok {
				fields[n] = ft
			}
		}
	}
	return fields
}

func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// skipRest consumes the rest of an object or array whose opening delimiter was just read.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
