package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// TestBuildInfo: the agent's registry, the one its /metrics serves, has gleaner_build_info of the running binary.
func TestBuildInfo(t *testing.T) {
	families, err := New().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	build := version.Get()
	for _, f := range families {
		if f.GetName() != "gleaner_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("gleaner_build_info has %d series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"version": build.Version, "commit": build.Commit, "goversion": build.GoVersion}
		if diff := cmp.Diff(want, labels); diff != "" {
			t.Errorf("gleaner_build_info's labels (-want +got):\n%s", diff)
		}
		if v := m.GetGauge().GetValue(); v != 1 {
			t.Errorf("gleaner_build_info = %v, want 1", v)
		}
		return
	}
	t.Fatalf("the agent's registry has no gleaner_build_info among %d families", len(families))
}
