package system

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"one line, no newline", "some avg10=0.00", []string{"some avg10=0.00"}},
		{"blank lines and spaces skipped", "a 1\n\n  \t\nb 2\n", []string{"a 1", "b 2"}},
		{"only blanks", "\n \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for line := range Lines([]byte(tt.in)) {
				got = append(got, string(line))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lines(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	// A loop that stops early stops the lines.
	var first []string
	for line := range Lines([]byte("a\nb\nc\n")) {
		first = append(first, string(line))
		break
	}
	if !slices.Equal(first, []string{"a"}) {
		t.Errorf("break after the first line: %q", first)
	}
}

func TestNextField(t *testing.T) {
	var got []string
	rest := []byte("  cpu\t1  2\n")
	for {
		var f []byte
		if f, rest = NextField(rest); len(f) == 0 {
			break
		}
		got = append(got, string(f))
	}
	if want := []string{"cpu", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("fields %q, want %q", got, want)
	}
}
