package ci

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// TestMakeBuildStampsTheVersion: `make build` links VERSION into every binary, and each shows the same build the
// same way: gleaner-manager --version, gleaner-agent --version, kubectl glean version (and its -o json), with the
// commit go build recorded from the checkout.
func TestMakeBuildStampsTheVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skipf(t, "running the Makefile needs make: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const want = "v1.2.3-stamped"
	bin := t.TempDir()
	cmd := exec.Command("make", "-C", root, "--no-print-directory", "build", "BIN="+bin, "VERSION="+want)
	cmd.Env = environWithout("MAKEFLAGS", "MAKELEVEL", "MFLAGS")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, name), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	var printed struct {
		ClientVersion version.Info `json:"clientVersion"`
	}
	if out := run("kubectl-glean", "version", "-o", "json"); json.Unmarshal([]byte(out), &printed) != nil {
		t.Fatalf("kubectl glean version -o json printed no version:\n%s", out)
	}
	build := printed.ClientVersion
	if build.Version != want {
		t.Errorf("kubectl-glean was built as %q, want the Makefile's VERSION %q", build.Version, want)
	}
	if head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		if commit := strings.TrimSpace(string(head)); build.Commit != commit {
			t.Errorf("kubectl-glean names commit %q, want the checkout's %q", build.Commit, commit)
		}
	}
	for _, c := range []struct{ name, line string }{
		{"gleaner-manager", run("gleaner-manager", "--version")},
		{"gleaner-agent", run("gleaner-agent", "--version")},
		{"kubectl-glean", run("kubectl-glean", "version")},
	} {
		if want := c.name + " " + build.String() + "\n"; c.line != want {
			t.Errorf("%s printed %q, want %q", c.name, c.line, want)
		}
	}
}
