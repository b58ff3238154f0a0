package sloconfig

// The slo-controller-config ConfigMap: each key holds one JSON document, with a cluster strategy and node overrides
// selected by labels (colocation-config has its cluster strategy at the top level and calls its overrides
// nodeConfigs; host-application-config has applications and nodeConfigs):
//
//	data:
//	  colocation-config: |
//	    {"enable": true, "cpuReclaimThresholdPercent": 60,
//	     "nodeConfigs": [{"name": "canary", "nodeSelector": {"matchLabels": {"pool": "canary"}}, "enable": false}]}
//	  resource-threshold-config: |
//	    {"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 65},
//	     "nodeStrategies": [{"name": "anolis", "nodeSelector": {"matchLabels": {"kubernetes.io/kernel": "anolis"}},
//	                         "cpuSuppressThresholdPercent": 55}]}
//	  resource-qos-config: |
//	    {"clusterStrategy": {"beClass": {"cpuQOS": {"enable": true, "groupIdentity": -1}}}}
//	  cpu-burst-config: |
//	    {"clusterStrategy": {"policy": "auto"}}
//	  system-config: |
//	    {"clusterStrategy": {"minFreeKbytesFactor": 100}}
//	  host-application-config: |
//	    {"applications": [{"name": "nginx", "qos": "LS", "cgroupPath": {"base": "CgroupRoot", "relativePath": "nginx/"}}]}

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/gleaner-sh/gleaner/internal/jsonfields"
)

// KeyError is why one key of the ConfigMap was rejected. Its message is what the Warning event on the ConfigMap and
// the admission webhook's denial both say.
type KeyError struct {
	// Key is the ConfigMap key.
	Key string
	// Err is what is wrong with it.
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

// KeyResult is the outcome of parsing one key.
type KeyResult struct {
	// Key is the ConfigMap key.
	Key string
	// Present says whether the ConfigMap has the key.
	Present bool
	// Err is a *KeyError when the key is present but malformed or invalid; nil otherwise.
	Err error
	// Findings are notes that did not stop the key from applying (unknown fields, names matched ignoring case,
	// repeated fields).
	Findings []Finding

	raw   string
	value any // the key's compiled value when Err is nil and Present
}

// ParseResult is the outcome of parsing a whole ConfigMap.
type ParseResult struct {
	// Keys holds one result per key of Keys(), in that order.
	Keys []KeyResult
	// UnknownKeys are data keys Gleaner does not read, sorted.
	UnknownKeys []string
}

// Err joins the errors of every rejected key; nil when every present key is valid.
func (r ParseResult) Err() error {
	var errs []error
	for _, k := range r.Keys {
		if k.Err != nil {
			errs = append(errs, k.Err)
		}
	}
	return errors.Join(errs...)
}

// Warnings lists, one line each, the findings of every key and the unknown keys.
func (r ParseResult) Warnings() []string {
	var out []string
	for _, k := range r.Keys {
		for _, f := range k.Findings {
			out = append(out, k.Key+": "+f.String())
		}
	}
	for _, k := range r.UnknownKeys {
		out = append(out, fmt.Sprintf("%s: unknown key, ignored (known keys: %s)", k, strings.Join(Keys(), ", ")))
	}
	return out
}

// ParseConfigMap parses and validates every key of a ConfigMap's data. It never fails as a whole: each key has its
// own result, so one bad key does not hold the others back.
func ParseConfigMap(data map[string]string) ParseResult {
	var res ParseResult
	for _, def := range keyDefs() {
		raw, ok := data[def.name]
		kr := KeyResult{Key: def.name, Present: ok, raw: raw}
		if ok {
			kr.value, kr.Findings, kr.Err = def.parse(strings.NewReader(raw))
			if kr.Err != nil {
				kr.Err = &KeyError{Key: def.name, Err: kr.Err}
				kr.value = nil
			}
		}
		res.Keys = append(res.Keys, kr)
	}
	res.UnknownKeys = unknownKeys(data)
	return res
}

// ParseKey parses and validates one key's value read from r and returns its findings, or a *KeyError. It is for
// tools, tests and fuzzing; the manager uses Store.Apply and the webhook ParseConfigMap.
func ParseKey(key string, r io.Reader) ([]Finding, error) {
	for _, def := range keyDefs() {
		if def.name == key {
			_, findings, err := def.parse(r)
			if err != nil {
				return findings, &KeyError{Key: key, Err: err}
			}
			return findings, nil
		}
	}
	return nil, fmt.Errorf("unknown key %q (known keys: %s)", key, strings.Join(Keys(), ", "))
}

// decode reads one JSON document from r into a new T with encoding/json (field names matched as described in
// fields.go) and returns it with the findings about its field names. Errors carry the line and column; an integer
// field given something else names its range, from intRange (which may be nil).
func decode[T any](r io.Reader, intRange func(path string) (intBounds, bool)) (*T, []Finding, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the value: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, errors.New("the value is empty: write {} for the defaults, or remove the key")
	}
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, nil, decodeError(data, err, reflect.TypeFor[T](), intRange)
	}
	return v, jsonfields.Lint(data, reflect.TypeFor[T]()), nil
}

// decodeError rewrites encoding/json's errors to say where in the value the problem is, in the words of the JSON
// document rather than of Go types: "clusterStrategy.cpuEvictTimeWindowSeconds at line 1, column 52: must be an
// integer from 1 to 3600, not the JSON number 1.5". t is the type decoded into.
func decodeError(data []byte, err error, t reflect.Type, intRange func(path string) (intBounds, bool)) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at %s: %w", position(data, syntax.Offset), err)
	case errors.As(err, &typ):
		path, leaf := jsonPath(t, typ.Field)
		if path == "" {
			path = "the value"
		}
		got := "a JSON " + typ.Value
		if strings.HasPrefix(typ.Value, "number ") {
			got = "the JSON " + typ.Value
		}
		if isInteger(leaf) {
			want := "an integer"
			if intRange != nil {
				if b, ok := intRange(path); ok {
					want += " " + b.String()
				}
			}
			return fmt.Errorf("%s at %s: must be %s, not %s", path, position(data, typ.Offset), want, got)
		}
		return fmt.Errorf("%s at %s: %s cannot be a %s", path, position(data, typ.Offset), got, typ.Type)
	default:
		return fmt.Errorf("invalid value: %w", err)
	}
}

// jsonPath turns the field path of an encoding/json error, which names the Go types of embedded structs
// ("clusterStrategy.CPUBurstConfig.cfsQuotaBurstPeriodSeconds"), into the path a user wrote
// ("clusterStrategy.cfsQuotaBurstPeriodSeconds"), and returns the type at its end (nil when it cannot be followed).
func jsonPath(t reflect.Type, goPath string) (string, reflect.Type) {
	if goPath == "" {
		return "", t
	}
	var out []string
	for _, part := range strings.Split(goPath, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			out, t = append(out, part), nil
			continue
		}
		if ft, ok := jsonfields.Fields(t)[part]; ok {
			out, t = append(out, part), ft
			continue
		}
		if f, ok := t.FieldByName(part); ok && f.Anonymous {
			t = f.Type // an embedded struct: its fields are the parent's in JSON
			continue
		}
		out, t = append(out, part), nil
	}
	return strings.Join(out, "."), t
}

// isInteger reports whether t (behind pointers) is an integer type.
func isInteger(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// position turns encoding/json's offset (the bytes read when the error was found) into "line L, column C" of the
// byte that caused it.
func position(data []byte, offset int64) string {
	at := min(max(int(offset)-1, 0), len(data))
	line := 1 + bytes.Count(data[:at], []byte("\n"))
	col := at - bytes.LastIndexByte(data[:at], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
