package system

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile: a file up to the bound is read whole; one byte more is refused with ErrTooLarge, after reading no
// more than the bound and one byte.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		size    int
		wantErr bool
	}{{0, false}, {100, false}, {4096, false}, {4097, true}, {30 << 20, true}} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, tt.size), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(p, 4096)
		if tt.wantErr {
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 4096 bytes, not read") {
				t.Errorf("ReadFile of %d bytes: %v, want ErrTooLarge naming the bound", tt.size, err)
			}
			continue
		}
		if err != nil || len(b) != tt.size {
			t.Errorf("ReadFile of %d bytes: %d bytes, %v", tt.size, len(b), err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want ErrNotExist", err)
	}
}

// countingReader is an endless stream of x that counts what was read of it.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += int64(len(p))
	return len(p), nil
}

func TestLimitReaderStopsAtTheBound(t *testing.T) {
	src := &countingReader{}
	_, err := io.ReadAll(LimitReader(src, 1<<20))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("reading an endless file: %v, want ErrTooLarge", err)
	}
	if src.n > 1<<20+1 {
		t.Errorf("read %d bytes of an endless file with a bound of %d", src.n, 1<<20)
	}
}
