package system

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomic: the file is created, then replaced whole; a write that fails (here the rename, over a
// directory that holds a file) leaves what was there and no temporary file.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteFileAtomic(path, []byte(content), ".tmp"); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("after writing %q: %q, %v", content, b, err)
		}
	}
	busy := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(busy, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(busy, []byte("x"), ".tmp"); err == nil {
		t.Fatal("replacing a directory that holds a file: no error")
	}
	if st, err := os.Stat(filepath.Join(busy, "inside")); err != nil || !st.IsDir() {
		t.Errorf("the directory is no longer as it was: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "state.json" && e.Name() != "busy" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, ""); err == nil {
		t.Error("writing into a missing directory: no error")
	}
}
