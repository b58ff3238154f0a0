package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestKubeconfigFlags checks that every kubeconfig flag docs/kubectl-glean.md documents selects what it selects in
// kubectl.
func TestKubeconfigFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: one, cluster: {server: "https://one.example:6443"}}
- {name: two, cluster: {server: "https://two.example:6443"}}
users:
- {name: alice, user: {token: alice-token}}
- {name: bob, user: {token: bob-token}}
contexts:
- {name: first, context: {cluster: one, user: alice, namespace: team-a}}
- {name: second, context: {cluster: two, user: bob}}
current-context: first
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// What the flags select; only -n sets the namespace (a context's namespace restricts nothing, see --pods).
	type selected struct {
		Host, Token, Namespace string
		Timeout                time.Duration
	}
	one, two := "https://one.example:6443", "https://two.example:6443"
	tests := []struct {
		name string
		args []string
		want selected
	}{
		{"current context", nil, selected{Host: one, Token: "alice-token"}},
		{"--context", []string{"--context", "second"}, selected{Host: two, Token: "bob-token"}},
		{"--cluster", []string{"--cluster", "two"}, selected{Host: two, Token: "alice-token"}},
		{"--user", []string{"--user", "bob"}, selected{Host: one, Token: "bob-token"}},
		{"--server", []string{"--server", "https://three.example"}, selected{Host: "https://three.example", Token: "alice-token"}},
		{"-n", []string{"-n", "web"}, selected{Host: one, Token: "alice-token", Namespace: "web"}},
		{"--namespace", []string{"--namespace", "web"}, selected{Host: one, Token: "alice-token", Namespace: "web"}},
		{"--request-timeout", []string{"--request-timeout", "7s"}, selected{Host: one, Token: "alice-token", Timeout: 7 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Factory{Clock: clocktesting.NewFakeClock(time.Now())}
			root := newRootCommand(f)
			if err := root.ParseFlags(append([]string{"--kubeconfig", kubeconfig}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.RESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got := (selected{cfg.Host, cfg.BearerToken, f.Namespace(), cfg.Timeout}); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			expectClientRate(t, cfg)
		})
	}
}

// expectClientRate: the plugin's clients are not held to kubectl's 5 requests per second.
func expectClientRate(t *testing.T, cfg *rest.Config) {
	t.Helper()
	if cfg.QPS != clientQPS || cfg.Burst != clientBurst {
		t.Errorf("client rate %v/%d, want %v/%d", cfg.QPS, cfg.Burst, float32(clientQPS), clientBurst)
	}
}

// TestDocListsEveryVerb keeps the package documentation's list of verbs complete.
func TestDocListsEveryVerb(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	root := NewRootCommand(Streams{}, clocktesting.NewFakeClock(time.Now()))
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if want := "//\tkubectl glean " + c.Use; !strings.Contains(string(doc), want) {
			t.Errorf("doc.go does not list %q as %q", c.Name(), want)
		}
	}
}
