package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/test/ci"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// completions runs the completion request args and returns the candidates (the lines before cobra's :directive).
func completions(t *testing.T, run func(args ...string) (string, error), args ...string) []string {
	t.Helper()
	out, err := run(args...)
	if err != nil {
		t.Fatalf("completing %q: %v\n%s", args, err, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") {
			break
		}
		name, _, _ := strings.Cut(line, "\t") // a description follows a tab
		got = append(got, name)
	}
	return got
}

// TestCompletionThroughKubectl: kubectl (the envtest one, v1.36) completes `kubectl glean ...` by running
// kubectl_complete-glean, a link to kubectl-glean: verbs, node names from the cluster (those already typed left
// out), pod names of the namespace, and the -o formats and --sort-by keys a verb takes.
func TestCompletionThroughKubectl(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, testutil.Node("complete-a").Allocatable("cpu", "2", "memory", "4Gi").Obj())
	e.CreateNode(t, testutil.Node("complete-b").Allocatable("cpu", "2", "memory", "4Gi").Obj())
	e.CreatePod(t, testutil.Pod("complete-pod").Namespace("default").Node("complete-a").Requests("cpu", "100m").Obj())

	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		ci.Skipf(t, "no kubectl among the envtest binaries (KUBEBUILDER_ASSETS): %v", err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-glean")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-glean: %v\n%s", err, out)
	}
	if err := os.Symlink("kubectl-glean", filepath.Join(bin, CompletionCommand)); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"__complete", "glean"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+e.Kubeconfig,
			"KUBECACHEDIR="+cache) // kubectl keeps a discovery cache in ~/.kube unless told
		var stderr strings.Builder // kubectl's and cobra's debug lines
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out) + stderr.String(), err
		}
		return string(out), nil
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"check", "completion", "explain", "help", "nodes", "top", "version"}},
		{[]string{"nodes", "complete-"}, []string{"complete-a", "complete-b"}},
		{[]string{"explain", "complete-a", "complete-"}, []string{"complete-b"}},
		{[]string{"top", "nodes", "complete-b"}, []string{"complete-b"}},
		{[]string{"top", "pods", "-n", "default", ""}, []string{"complete-pod"}},
		{[]string{"top", "pods", "-A", ""}, nil},
		{[]string{"top", "pods", "--sort-by", ""}, topPodKeys},
		{[]string{"nodes", "-o", ""}, []string{"wide", "name", "json", "yaml", "jsonpath="}},
		{[]string{"version", "-o", ""}, []string{"json", "yaml", "jsonpath="}},
	} {
		if got := completions(t, run, tt.args...); !slices.Equal(got, tt.want) {
			t.Errorf("kubectl glean %s<TAB>: %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
}
