package system

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNotDurable marks an error of WriteFileAtomic that came after the new file was renamed into place: the new
// content is there, but syncing its directory failed, so a crash may still bring the old one back.
var ErrNotDurable = errors.New("file in place")

// WriteFileAtomic replaces the file at path with data, for the agent's own files on the node (the QoS plugins'
// state files, the prediction checkpoints): data goes to a temporary file in path's directory, named path's base,
// "." and a random part, then tempSuffix; the file is synced, renamed over path, and the directory synced, so that
// a crash leaves the old content or the new, never a part of either, and the rename itself survives. A failure
// before the rename removes the temporary file and leaves path as it was; one after it wraps ErrNotDurable.
func WriteFileAtomic(path string, data []byte, tempSuffix string) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return fmt.Errorf("creating temporary file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil && !errors.Is(err, ErrNotDurable) {
			_ = f.Close() // a second Close after a failed one only reports os.ErrClosed
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing temporary file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing temporary file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing temporary file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming temporary file into place: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%w, but syncing the directory failed: %w", ErrNotDurable, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
