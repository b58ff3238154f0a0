package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/test/ci"
)

func TestParseBytes(t *testing.T) {
	if v, err := parseBytes("--rate", "4Mi"); err != nil || v != 4<<20 {
		t.Errorf("4Mi = %d, %v", v, err)
	}
	for _, bad := range []string{"x", "512Ki", "-1Mi"} {
		if _, err := parseBytes("--rate", bad); err == nil || !strings.Contains(err.Error(), "--rate") {
			t.Errorf("%q: want an error naming the flag, got %v", bad, err)
		}
	}
}

// TestWriteUsesDirectIO writes for a moment into a temporary directory: the file must hold whole blocks, never more
// than the region, and a directory that cannot take direct I/O is an error naming the file.
func TestWriteUsesDirectIO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diskwriter.dat")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := write(ctx, path, 20*block, 2); err != nil {
		if strings.Contains(err.Error(), "direct I/O") {
			ci.Skipf(t, "the temporary directory's file system takes no O_DIRECT: %v", err)
		}
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 || st.Size() > 2*block || st.Size()%block != 0 {
		t.Errorf("file size %d, want 1 or 2 whole MiB", st.Size())
	}
}
