package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlan(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name       string
		size, step string
		want       []int64
		wantErr    bool
	}{
		{name: "all at once", size: "128Mi", want: []int64{128 * mi}},
		{name: "even steps", size: "128Mi", step: "64Mi", want: []int64{64 * mi, 64 * mi}},
		{name: "last step smaller", size: "100Mi", step: "64Mi", want: []int64{64 * mi, 36 * mi}},
		{name: "bad size", size: "lots", wantErr: true},
		{name: "zero size", size: "0", wantErr: true},
		{name: "negative step", size: "1Mi", step: "-1Mi", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan(tt.size, tt.step)
			if (err != nil) != tt.wantErr {
				t.Fatalf("plan(%q, %q) error = %v, want error %v", tt.size, tt.step, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan(%q, %q) (-want +got):\n%s", tt.size, tt.step, diff)
			}
		})
	}
}

func TestTouchWritesEveryPage(t *testing.T) {
	b := touch(make([]byte, 3*pageSize+1))
	for _, i := range []int{0, pageSize, 2 * pageSize, 3 * pageSize} {
		if b[i] != 1 {
			t.Errorf("byte %d not written", i)
		}
	}
}
