// Package ci decides what a test does when the real part it needs (root, a cgroup v1 hierarchy, a mount, the
// local cluster) is not on the machine: outside CI it skips and says why; under CI=true it fails with the same
// reason, so that CI cannot go green by skipping what it was meant to check.
//
//	if os.Geteuid() != 0 {
//		ci.Skipf(t, "creating cgroups needs root")
//	}
//
// The Makefile's e2e target follows the same rule for the end-to-end suite (makefile_test.go holds it to it).
package ci

import (
	"fmt"
	"os"
	"testing"
)

// EnvVar is the environment variable CI systems set; CI=true turns a skip for a missing real part into a failure.
const EnvVar = "CI"

// Enabled reports whether the tests run under CI (CI=true).
func Enabled() bool { return os.Getenv(EnvVar) == "true" }

// Skipf skips t with the reason the format gives, which should name what is missing; under CI=true it fails t with
// that reason instead.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if Enabled() {
		t.Fatalf("%s (CI=true: a test that cannot run its real part fails instead of skipping)", reason)
		return
	}
	t.Skip(reason)
}
