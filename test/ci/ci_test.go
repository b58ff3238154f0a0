package ci

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records the first Skip or Fatal instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestSkipf(t *testing.T) {
	tests := []struct {
		name, ci            string
		wantSkip, wantFatal string
	}{
		{name: "outside CI", ci: "", wantSkip: "needs root (uid 1000)"},
		{name: "CI=false", ci: "false", wantSkip: "needs root (uid 1000)"},
		{name: "CI=true", ci: "true", wantFatal: "needs root (uid 1000) (CI=true: a test that cannot run its real part fails instead of skipping)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvVar, tt.ci)
			r := &recorder{TB: t}
			Skipf(r, "needs root (uid %d)", 1000)
			if r.skipped != tt.wantSkip || r.failed != tt.wantFatal {
				t.Errorf("Skipf: skipped %q, failed %q; want skipped %q, failed %q", r.skipped, r.failed, tt.wantSkip, tt.wantFatal)
			}
			if got, want := Enabled(), tt.ci == "true"; got != want {
				t.Errorf("Enabled() = %v with CI=%q", got, tt.ci)
			}
		})
	}
}
