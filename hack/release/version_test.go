package main

import (
	"testing"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
)

func TestChartVersion(t *testing.T) {
	tests := []struct {
		version, want string
		wantErr       bool
	}{
		{version: "v1.2.3", want: "1.2.3"},
		{version: "1.2.3", want: "1.2.3"},
		{version: "v1.3.0-rc.1", want: "1.3.0-rc.1"},
		{version: "v1.2.3+build.5", want: "1.2.3+build.5"},
		{version: "v1.2.3-stamped", want: "1.2.3-stamped"},
		{version: "v1.2.3-dirty", want: "1.2.3-dirty"},
		{version: "v0.0.0-dev", want: "0.0.0-dev"},
		// git describe after a tag: a pre-release of the next patch.
		{version: "v0.1.0-3-g68c422d", want: "0.1.1-dev.3.g68c422d"},
		{version: "v0.1.0-3-g68c422d-dirty", want: "0.1.1-dev.3.g68c422d.dirty"},
		{version: "v1.9.9-12-gabcdef0", want: "1.9.10-dev.12.gabcdef0"},
		// git describe --always before the first tag.
		{version: "68c422d", want: "0.0.0-dev.g68c422d"},
		{version: "68c422d-dirty", want: "0.0.0-dev.g68c422d.dirty"},
		{version: "0123456", want: "0.0.0-dev.g0123456"}, // 0123456 alone is no SemVer identifier: a leading zero
		{version: "", wantErr: true},
		{version: "main", wantErr: true},
		{version: "v1.2", wantErr: true},
		{version: "v01.2.3", wantErr: true},
		{version: "v1.2.3-01", wantErr: true},
		{version: "v1.2.3 ", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := chartVersion(tt.version)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("chartVersion(%q) = %q, want an error", tt.version, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("chartVersion(%q) = %q, want %q", tt.version, got, tt.want)
			}
			// What Helm and Krew (v prefix, then apimachinery's SemVer, its internal/installation/semver) accept.
			if _, err := k8sversion.ParseSemantic(got); err != nil || !semVer.MatchString(got) {
				t.Errorf("chartVersion(%q) = %q is not SemVer: %v", tt.version, got, err)
			}
		})
	}
}

// TestChartVersionOrders: the versions of builds after a tag sort after the tag, by the number of commits, and before
// the next release, as Helm and Krew compare them.
func TestChartVersionOrders(t *testing.T) {
	ordered := []string{"v0.1.0", "v0.1.0-3-g68c422d", "v0.1.0-12-gabcdef0", "v0.1.1-rc.1", "v0.1.1", "v0.2.0-1-g1234567"}
	for i := 1; i < len(ordered); i++ {
		a, b := mustChartVersion(t, ordered[i-1]), mustChartVersion(t, ordered[i])
		if !a.LessThan(b) {
			t.Errorf("%s (from %s) does not sort before %s (from %s)", a, ordered[i-1], b, ordered[i])
		}
	}
}

func mustChartVersion(t *testing.T, version string) *k8sversion.Version {
	t.Helper()
	v, err := chartVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return k8sversion.MustParseSemantic(v)
}
