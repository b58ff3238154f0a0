package qosmanager

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// annotationShape has what the plugins' annotation types have: an inline embedded struct, a nested object, a list
// of objects, a map, a type that decodes itself, and a field kept out of JSON.
type annotationShape struct {
	Policy     string `json:"policy,omitempty"`
	inlineBase `json:",inline"`
	Blocks     []*shapeBlock       `json:"blocks,omitempty"`
	Limits     map[string]int64    `json:"limits,omitempty"`
	Egress     *intstr.IntOrString `json:"egress,omitempty"`
	Hidden     int                 `json:"-"`
}

type inlineBase struct {
	Percent *int64 `json:"percent,omitempty"`
}

type shapeBlock struct {
	Name  string `json:"name"`
	IOCfg struct {
		ReadBPS *int64 `json:"readBPS,omitempty"`
	} `json:"ioCfg"`
}

// TestDecodeAnnotation: Gleaner's own keys refuse what the type has no place for; Koordinator's skip it and name
// it by its path, however deep, matching names as encoding/json does; both refuse malformed JSON and anything
// after the value.
func TestDecodeAnnotation(t *testing.T) {
	const own, koord = "gleaner.sh/test-qos", "koordinator.sh/testQOS"
	tests := []struct {
		name        string
		key, raw    string
		wantIgnored []string
		wantErr     string
		want        annotationShape
	}{
		{name: "known fields", key: own, raw: `{"policy":"auto","percent":5}`, want: annotationShape{Policy: "auto", inlineBase: inlineBase{Percent: ptr.To[int64](5)}}},
		{name: "strict: an unknown field", key: own, raw: `{"policy":"auto","pageCache":true}`, wantErr: `unknown field "pageCache"`},
		{name: "strict: an unknown nested field", key: own, raw: `{"blocks":[{"name":"vda","ioCfg":{"readLatency":1}}]}`, wantErr: `unknown field "readLatency"`},
		{name: "lenient: unknown fields at every depth, sorted", key: koord,
			raw:         `{"zeta":1,"policy":"auto","blocks":[{"name":"vda","ioCfg":{"readLatency":1}},{"name":"vdb","extra":{"x":1}}],"alpha":[1,2]}`,
			wantIgnored: []string{"alpha", "blocks[0].ioCfg.readLatency", "blocks[1].extra", "zeta"},
			want:        annotationShape{Policy: "auto", Blocks: []*shapeBlock{{Name: "vda"}, {Name: "vdb"}}}},
		{name: "lenient: names match ignoring case", key: koord, raw: `{"POLICY":"none","Percent":3}`,
			want: annotationShape{Policy: "none", inlineBase: inlineBase{Percent: ptr.To[int64](3)}}},
		{name: "lenient: a map takes any key, a self-decoding type is its own judge", key: koord, raw: `{"limits":{"anything":1},"egress":"20M"}`,
			want: annotationShape{Limits: map[string]int64{"anything": 1}, Egress: ptr.To(intstr.FromString("20M"))}},
		{name: `lenient: a field tagged "-" is unknown`, key: koord, raw: `{"Hidden":1,"-":2}`, wantIgnored: []string{"-", "Hidden"}},
		{name: "lenient: null", key: koord, raw: `null`},
		{name: "lenient: not JSON", key: koord, raw: `policy: auto`, wantErr: "invalid character"},
		{name: "lenient: the wrong type", key: koord, raw: `{"percent":"5"}`, wantErr: "cannot unmarshal string"},
		{name: "lenient: not an object", key: koord, raw: `[1]`, wantErr: "cannot unmarshal array"},
		{name: "lenient: empty", key: koord, raw: ``, wantErr: "EOF"},
		{name: "lenient: a second value", key: koord, raw: `{"policy":"auto"} {}`, wantErr: "more follows the JSON value"},
		{name: "strict: a second value", key: own, raw: `{"policy":"auto"} x`, wantErr: "more follows the JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got annotationShape
			ignored, err := DecodeAnnotation(tt.key, tt.raw, &got)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if d := cmp.Diff(tt.wantIgnored, ignored); d != "" {
				t.Errorf("ignored (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(annotationShape{}), cmp.Comparer(func(a, b intstr.IntOrString) bool { return a == b })); d != "" {
				t.Errorf("decoded (-want +got):\n%s", d)
			}
		})
	}
	if got := IgnoredFields(koord, nil); got != "" {
		t.Errorf("IgnoredFields with none: %q", got)
	}
	if got, want := IgnoredFields(koord, []string{"a", "b.c"}), "annotation koordinator.sh/testQOS: Gleaner does not read a, b.c, ignored"; got != want {
		t.Errorf("IgnoredFields: %q, want %q", got, want)
	}
}

// TestWarningsPartly: a value used in part is said once per pod and value; a new value is said again, and a value
// used whole (an empty message) forgets the pod.
func TestWarningsPartly(t *testing.T) {
	events := &testutil.Events{}
	w := NewWarnings(events, ReasonAnnotationFieldsIgnored)
	pod := testutil.Pod("p").Obj()
	ctx := context.Background()
	for range 2 {
		w.Partly(ctx, pod, "v1", "annotation k: Gleaner does not read x, ignored")
	}
	w.Partly(ctx, pod, "v2", "annotation k: Gleaner does not read y, ignored")
	w.Partly(ctx, pod, "v3", "")
	w.Partly(ctx, pod, "v2", "annotation k: Gleaner does not read y, ignored")
	want := []string{
		"p Warning AnnotationFieldsIgnored: annotation k: Gleaner does not read x, ignored; the rest of the value applies",
		"p Warning AnnotationFieldsIgnored: annotation k: Gleaner does not read y, ignored; the rest of the value applies",
		"p Warning AnnotationFieldsIgnored: annotation k: Gleaner does not read y, ignored; the rest of the value applies",
	}
	if d := cmp.Diff(want, events.List()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
