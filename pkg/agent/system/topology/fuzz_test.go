package topology

import (
	"bytes"
	"testing"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// FuzzParseNodeMeminfo: any input gives values within system.MaxMemoryBytes or an error, never a panic.
func FuzzParseNodeMeminfo(f *testing.F) {
	for _, seed := range []string{"Node 0 MemTotal: 2048 kB\nNode 0 MemFree: 1024 kB\n", "Node 0 MemTotal:\n", "Node\n", "", "Node 0 MemTotal: 18014398509481984 kB\nNode 0 MemFree: 0 kB\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		total, free, err := parseNodeMeminfo(bytes.NewReader(b))
		if err == nil && (total > system.MaxMemoryBytes || free > system.MaxMemoryBytes) {
			t.Fatalf("parseNodeMeminfo(%q) = %d, %d", b, total, free)
		}
	})
}
