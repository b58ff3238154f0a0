package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseResourceExplanation(t *testing.T) {
	v := resource.MustParse("3k")
	want := NodeResourceExplanation{
		UpdateTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		Strategy:   "cluster",
		Resources: []ResourceDerivation{{
			Resource: "kubernetes.io/batch-cpu", Plugin: "batch", Value: &v, Formula: "capacity - used",
			Terms: []DerivationTerm{{Name: "capacity", Value: resource.MustParse("4")}},
		}},
	}
	good, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "what the manager writes", in: string(good)},
		{name: "a field of a newer manager", in: strings.Replace(string(good), `{"updateTime"`, `{"future":1,"updateTime"`, 1)},
		{name: "empty", in: "", wantErr: `"" is not a JSON object`},
		{name: "null", in: "null", wantErr: "is not a JSON object"},
		{name: "a list", in: "[]", wantErr: "is not a JSON object"},
		{name: "two objects", in: string(good) + string(good), wantErr: "invalid character"},
		{name: "cut short", in: string(good[:len(good)/2]), wantErr: "unexpected end of JSON input"},
		{name: "a bad quantity", in: `{"resources":[{"resource":"r","value":"lots"}]}`, wantErr: "quantities must match"},
		// Padded past the bound (the API server would refuse it on a node anyway): refused before it is decoded.
		{name: "too large", in: `{"strategy":"` + strings.Repeat("x", MaxResourceExplanationSize) + `"}`, wantErr: "more than the 262144 an explanation may have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResourceExplanation(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
