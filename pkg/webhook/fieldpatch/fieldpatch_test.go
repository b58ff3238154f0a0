package fieldpatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
)

// TestMapOps: keys are escaped as JSON pointer tokens, and an object absent before is added whole.
func TestMapOps(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]string
		want          []jsonpatch.JsonPatchOperation
	}{
		{"escaped keys", map[string]string{"a~b/c": "1", "gone": "x", "same": "s"}, map[string]string{"a~b/c": "2", "new/~1": "", "same": "s"},
			[]jsonpatch.JsonPatchOperation{
				{Operation: "replace", Path: "/o/a~0b~1c", Value: "2"},
				{Operation: "remove", Path: "/o/gone"},
				{Operation: "add", Path: "/o/new~1~01", Value: ""},
			}},
		{"absent before", nil, map[string]string{"k/1": "v"}, []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/o", Value: map[string]any{"k/1": "v"}}}},
		{"absent before and after", nil, map[string]string{}, nil},
		{"unchanged", map[string]string{"k": "v"}, map[string]string{"k": "v"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, MapOps("/o", tt.before, tt.after, StringEqual, StringValue)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestMemberOps: a member is added, replaced or removed only as its presence and value say, and left alone when
// nothing changed.
func TestMemberOps(t *testing.T) {
	one, two := int32(1), int32(2)
	got := [][]jsonpatch.JsonPatchOperation{
		StringOp("/s", "", "x"), StringOp("/s", "x", "y"), StringOp("/s", "x", ""), StringOp("/s", "x", "x"),
		PointerOp("/p", nil, &one), PointerOp("/p", &one, &two), PointerOp("/p", &one, nil), PointerOp[int32]("/p", nil, nil),
		PointerOp("/p", &one, &one),
	}
	want := [][]jsonpatch.JsonPatchOperation{
		{{Operation: "add", Path: "/s", Value: "x"}}, {{Operation: "replace", Path: "/s", Value: "y"}}, {{Operation: "remove", Path: "/s"}}, nil,
		{{Operation: "add", Path: "/p", Value: int32(1)}}, {{Operation: "replace", Path: "/p", Value: int32(2)}}, {{Operation: "remove", Path: "/p"}}, nil,
		nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
