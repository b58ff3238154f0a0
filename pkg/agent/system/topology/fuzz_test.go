package topology

import (
	"bytes"
	"testing"
)

// FuzzParseNodeMeminfo: any input gives values or an error, never a panic.
func FuzzParseNodeMeminfo(f *testing.F) {
	for _, seed := range []string{"Node 0 MemTotal: 2048 kB\nNode 0 MemFree: 1024 kB\n", "Node 0 MemTotal:\n", "Node\n", ""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = parseNodeMeminfo(bytes.NewReader(b))
	})
}
