package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// checksumsFile lists the SHA-256 of every other artifact of a release, as sha256sum prints them, so that
// `sha256sum -c checksums.txt` checks a download.
const checksumsFile = "checksums.txt"

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checksums is the content of checksumsFile for the named files in dir: one line `<hex>  <name>` per file (two
// spaces: sha256sum's text mode), sorted by name.
func checksums(dir string, names []string) ([]byte, error) {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return []byte(b.String()), nil
}
