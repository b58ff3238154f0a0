package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// TestVersion: `kubectl glean version` prints the binary's build in every form, the line the same as the other
// binaries' --version, without asking the cluster (the kubeconfig points nowhere).
func TestVersion(t *testing.T) {
	build := version.Get()
	decoders := map[string]func([]byte, any) error{
		"json": json.Unmarshal,
		"yaml": func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) },
	}
	nowhere := []string{"--kubeconfig", "/nonexistent/kubeconfig", "--server", "https://127.0.0.1:1"}

	t.Run("line", func(t *testing.T) {
		out, errOut, err := gleanAt(t, time.Now(), append(nowhere, "version")...)
		if err != nil {
			t.Fatalf("kubectl glean version: %v\n%s", err, errOut)
		}
		if want := "kubectl-glean " + build.String() + "\n"; out != want {
			t.Errorf("kubectl glean version printed %q, want %q", out, want)
		}
	})
	for format, decode := range decoders {
		t.Run(format, func(t *testing.T) {
			out, errOut, err := gleanAt(t, time.Now(), append(nowhere, "version", "-o", format)...)
			if err != nil {
				t.Fatalf("kubectl glean version -o %s: %v\n%s", format, err, errOut)
			}
			var got Versions
			if err := decode([]byte(out), &got); err != nil {
				t.Fatalf("-o %s printed what does not decode: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(Versions{ClientVersion: build}, got); diff != "" {
				t.Errorf("-o %s (-want +got):\n%s", format, diff)
			}
			for _, key := range []string{"clientVersion", "version", "commit", "modified", "goVersion", "platform"} {
				if !strings.Contains(out, key) {
					t.Errorf("-o %s has no %s:\n%s", format, key, out)
				}
			}
		})
	}
	for _, args := range [][]string{{"version", "-o", "wide"}, {"version", "extra"}} {
		if _, _, err := gleanAt(t, time.Now(), args...); err == nil {
			t.Errorf("kubectl glean %s succeeded; want an error", strings.Join(args, " "))
		}
	}
}
