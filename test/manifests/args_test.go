package manifests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gleaner-sh/gleaner/pkg/agent"
	"github.com/gleaner-sh/gleaner/pkg/manager"
)

// TestOverlaysArgs: the arguments config/default and config/local give the manager and the agent parse with
// their flags and validate; config/default serves metrics over HTTPS (the default), config/local in plain HTTP on
// loopback, which the binaries accept only there.
func TestOverlaysArgs(t *testing.T) {
	for _, o := range []struct {
		dir    string
		secure bool
	}{{"default", true}, {"local", false}} {
		t.Run(o.dir, func(t *testing.T) {
			b := build(t, filepath.Join(root, "config", o.dir))
			margs := b.manager(t).Spec.Template.Spec.Containers[0].Args
			mo := manager.NewOptions()
			fs := pflag.NewFlagSet("gleaner-manager", pflag.ContinueOnError)
			mo.AddFlags(fs)
			if err := fs.Parse(margs); err != nil {
				t.Fatalf("gleaner-manager's args %v: %v", margs, err)
			}
			if err := mo.Validate(); err != nil {
				t.Errorf("gleaner-manager's args %v: %v", margs, err)
			}
			aargs := b.agent(t).Spec.Template.Spec.Containers[0].Args
			ao := agent.NewOptions()
			fs = pflag.NewFlagSet("gleaner-agent", pflag.ContinueOnError)
			ao.AddFlags(fs)
			if err := fs.Parse(aargs); err != nil {
				t.Fatalf("gleaner-agent's args %v: %v", aargs, err)
			}
			ao.NodeName = "from-the-downward-api"
			if err := ao.Validate(); err != nil {
				t.Errorf("gleaner-agent's args %v: %v", aargs, err)
			}
			if mo.Serving.SecureMetrics != o.secure || ao.Serving.SecureMetrics != o.secure {
				t.Errorf("metrics over HTTPS: manager %v, agent %v; want %v", mo.Serving.SecureMetrics, ao.Serving.SecureMetrics, o.secure)
			}
			if mo.Serving.EnableHTTP2 || ao.Serving.EnableHTTP2 {
				t.Error("HTTP/2 is on; it stays off unless an operator asks for it")
			}
			if !o.secure && !slices.ContainsFunc(margs, func(a string) bool { return strings.HasPrefix(a, "--metrics-bind-address=127.0.0.1:") }) {
				t.Errorf("plain HTTP metrics off loopback: %v", margs)
			}
		})
	}
}
