package qosmanager

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// WriteStateFile replaces the file name in dir (Deps.StateDir) with b, creating dir, through
// system.WriteFileAtomic: a crash leaves the old content or the new, never a part of either.
func WriteStateFile(dir, name string, b []byte) error {
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	if err := system.WriteFileAtomic(path, b, ""); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteStateJSON is WriteStateFile of v encoded as JSON (one line).
func WriteStateJSON(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Join(dir, name), err)
	}
	return WriteStateFile(dir, name, append(b, '\n'))
}
