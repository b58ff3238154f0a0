package toggle

import (
	"strings"
	"testing"
)

func TestEnabled(t *testing.T) {
	tests := []struct {
		selection []string
		name      string
		want      bool
	}{
		{[]string{"*"}, "batch", true},
		{[]string{"*", "-batch"}, "batch", false},
		{[]string{"-batch", "*"}, "batch", false},
		{[]string{"batch"}, "batch", true},
		{[]string{"batch"}, "mid", false},
		{[]string{"-mid"}, "batch", false},
		{nil, "batch", false},
	}
	for _, tt := range tests {
		if got := Enabled(tt.selection, tt.name); got != tt.want {
			t.Errorf("Enabled(%q, %q) = %v, want %v", tt.selection, tt.name, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	known := []string{"batch", "mid"}
	if err := Validate("--plugins", []string{"*", "-mid", "batch"}, known); err != nil {
		t.Fatalf("valid selection rejected: %v", err)
	}
	err := Validate("--plugins", []string{"*", "-gpu", "cpu"}, known)
	if err == nil {
		t.Fatal("unknown names accepted")
	}
	for _, want := range []string{`--plugins: unknown name "gpu"`, `unknown name "cpu"`, "known: batch, mid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
