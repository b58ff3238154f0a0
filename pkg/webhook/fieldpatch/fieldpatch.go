// Package fieldpatch builds the JSON patches (RFC 6902) the manager's mutating webhooks answer with, member by member
// for the fields a webhook changes. A webhook must never answer with a diff of the object re-encoded from its Go
// type: that encoding lacks every field newer than this library's type, and the diff would remove them from the
// object the API server stores (a kubelet or API server newer than the library sends such fields).
package fieldpatch

import (
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// StringEqual and StringValue are MapOps' equal and value for string members.
func StringEqual(a, b string) bool { return a == b }

// StringValue is the JSON value of a string member.
func StringValue(s string) any { return s }

// QuantityEqual and QuantityValue are MapOps' equal and value for resource lists: equal amounts are equal
// whatever their format, and the value is the quantity's canonical string.
func QuantityEqual(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }

// QuantityValue is the JSON value of a quantity member.
func QuantityValue(q resource.Quantity) any { return q.String() }

// StringOp returns the operation that takes the string member at path from before to after; "" is absent (the
// field's omitempty).
func StringOp(path, before, after string) []jsonpatch.JsonPatchOperation {
	return MemberOp(path, before != "", after != "", before != after, after)
}

// PointerOp returns the operation that takes the member at path from *before to *after; nil is absent.
func PointerOp[T comparable](path string, before, after *T) []jsonpatch.JsonPatchOperation {
	var value any
	if after != nil {
		value = *after
	}
	return MemberOp(path, before != nil, after != nil, before != nil && after != nil && *before != *after, value)
}

// MemberOp returns the operation on the object member at path: had and has say whether it is there before and
// after, changed whether its value differs, value is its value after. Only a member known to be there is replaced
// or removed; one added over a value the decoding did not show (an explicit null or "") replaces it.
func MemberOp(path string, had, has, changed bool, value any) []jsonpatch.JsonPatchOperation {
	switch {
	case had && !has:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", path, nil)}
	case has && !had:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, value)}
	case has && changed:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("replace", path, value)}
	}
	return nil
}

// MapOps returns the operations that take the JSON object at path from before to after, member by member in key
// order (MemberOp); value gives a member's JSON value. A nil before is an object absent from the document: after
// is added whole. A nil after (with a non-nil before) removes the object.
func MapOps[K ~string, V any](path string, before, after map[K]V, equal func(a, b V) bool, value func(V) any) []jsonpatch.JsonPatchOperation {
	switch {
	case before == nil && len(after) == 0:
		return nil
	case before == nil:
		whole := make(map[string]any, len(after))
		for k, v := range after {
			whole[string(k)] = value(v)
		}
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, whole)}
	case after == nil:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", path, nil)}
	}
	keys := make([]K, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var ops []jsonpatch.JsonPatchOperation
	for _, k := range keys {
		b, had := before[k]
		a, has := after[k]
		ops = append(ops, MemberOp(path+"/"+PointerToken(string(k)), had, has, had && has && !equal(b, a), value(a))...)
	}
	return ops
}

// PointerToken escapes a key as a JSON pointer token (RFC 6901): "~" as "~0", then "/" as "~1".
var PointerToken = strings.NewReplacer("~", "~0", "/", "~1").Replace
