package localcluster

import (
	"strings"
	"testing"
)

func TestLayoutValidate(t *testing.T) {
	tests := []struct {
		dir     string
		wantErr string
	}{
		{dir: DefaultStateDir},
		{dir: "relative/dir", wantErr: "must be an absolute path"},
		{dir: "/" + strings.Repeat("d", 40), wantErr: "too long"},
	}
	for _, tt := range tests {
		err := Layout{Dir: tt.dir}.validate()
		if tt.wantErr == "" && err != nil {
			t.Errorf("validate(%q) = %v, want nil", tt.dir, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("validate(%q) = %v, want an error saying %q", tt.dir, err, tt.wantErr)
		}
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := Config{StateDir: "rel", RepoRoot: t.TempDir(), NodeReadyTimeout: -1}.withDefaults().validate()
	for _, want := range []string{"absolute path", "no hack/kube-build.sh", "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want it to say %q", err, want)
		}
	}
	if _, err := New(Config{StateDir: "rel"}); err == nil {
		t.Error("New accepted a relative state directory")
	}
}
