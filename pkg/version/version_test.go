package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const commit = "68c422d1ea2d07b4531755ce4568b431048b3ee9"

// buildInfo is what go build records in a binary built inside a git checkout.
func buildInfo(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/gleaner-sh/gleaner", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestFromBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	pseudo := "v0.0.0-20261202041121-68c422d1ea2d+dirty"
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   Info
	}{
		{
			name:   "the linker's version wins over the one Go recorded",
			linked: "v0.3.0",
			bi:     buildInfo(pseudo, "vcs", "git", "vcs.revision", commit, "vcs.modified", "false"),
			want:   Info{Version: "v0.3.0", Commit: commit, GoVersion: "go1.99.1", Platform: platform},
		},
		{
			name:   "a modified tree",
			linked: "v0.3.0-4-g68c422d-dirty",
			bi:     buildInfo(pseudo, "vcs.revision", commit, "vcs.modified", "true"),
			want:   Info{Version: "v0.3.0-4-g68c422d-dirty", Commit: commit, Modified: true, GoVersion: "go1.99.1", Platform: platform},
		},
		{
			name: "no linker's version: Go's pseudo-version of the commit",
			bi:   buildInfo(pseudo, "vcs.revision", commit, "vcs.modified", "true"),
			want: Info{Version: pseudo, Commit: commit, Modified: true, GoVersion: "go1.99.1", Platform: platform},
		},
		{
			name: "no version at all (a tree without git): the dev version",
			bi:   buildInfo("(devel)"),
			want: Info{Version: DevVersion, GoVersion: "go1.99.1", Platform: platform},
		},
		{
			name: "go test records no main version",
			bi:   buildInfo(""),
			want: Info{Version: DevVersion, GoVersion: "go1.99.1", Platform: platform},
		},
		{
			name:   "no build information: the linker's version and the running toolchain",
			linked: "v0.3.0",
			want:   Info{Version: "v0.3.0", GoVersion: runtime.Version(), Platform: platform},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, fromBuildInfo(tt.linked, tt.bi)); diff != "" {
				t.Errorf("fromBuildInfo (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGet reads the test binary's own build information: go test records the toolchain but no commit or version.
func TestGet(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary has no build information")
	}
	got := Get()
	want := fromBuildInfo(version, bi)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	if got.GoVersion != runtime.Version() || got.Version == "" {
		t.Errorf("Get() = %+v: want the version set (%s without one) and Go %s", got, DevVersion, runtime.Version())
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		info Info
		want string
	}{
		{
			Info{Version: "v0.3.0", Commit: commit, GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"v0.3.0 (commit " + commit + ", go1.26.8, linux/amd64)",
		},
		{
			Info{Version: "v0.3.0-dirty", Commit: commit, Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			"v0.3.0-dirty (commit " + commit + ", modified, go1.26.8, linux/arm64)",
		},
		{
			Info{Version: DevVersion, GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"v0.0.0-dev (commit unknown, go1.26.8, linux/amd64)",
		},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.info, got, tt.want)
		}
		if strings.Contains(tt.info.String(), "\n") {
			t.Errorf("%+v.String() is more than one line", tt.info)
		}
	}
}

// TestCollector gathers gleaner_build_info from a registry: one series, 1, with the build in its labels.
func TestCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(Info{Version: "v0.3.0", Commit: commit, Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "gleaner_build_info" || families[0].GetType() != dto.MetricType_GAUGE {
		t.Fatalf("gathered %v, want the gauge gleaner_build_info alone", families)
	}
	if n := len(families[0].GetMetric()); n != 1 {
		t.Fatalf("gleaner_build_info has %d series, want 1", n)
	}
	m := families[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": "v0.3.0", "commit": commit, "goversion": "go1.26.8"}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if v := m.GetGauge().GetValue(); v != 1 {
		t.Errorf("gleaner_build_info = %v, want 1", v)
	}
}
