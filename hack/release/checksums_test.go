package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"b.tar.gz": "abc", "a.zip": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := checksums(dir, []string{"b.tar.gz", "a.zip"})
	if err != nil {
		t.Fatal(err)
	}
	// sha256sum's lines for these files, sorted by name.
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a.zip\n" +
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.tar.gz\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("checksums (-want +got):\n%s", diff)
	}
	if _, err := checksums(dir, []string{"missing"}); err == nil {
		t.Error("the checksum of a missing file: no error")
	}
}
