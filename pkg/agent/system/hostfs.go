package system

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HostFS reads and writes the host's kernel files outside the cgroup hierarchies, /proc/sys and /sys/fs/resctrl,
// under an injected root ("/" on a node, a fixture tree in tests). Paths are relative to the root
// ("proc/sys/vm/min_free_kbytes"). Like the cgroup writer it never creates a file: a missing file in an existing
// directory is a file this kernel lacks (ErrUnsupported), a missing directory something that is gone
// (fs.ErrNotExist).
type HostFS struct {
	root   string
	mounts map[string]string
}

// NewHostFS returns a HostFS rooted at root.
func NewHostFS(root string) *HostFS { return &HostFS{root: root, mounts: map[string]string{}} }

// Mount makes paths under prefix ("proc", "sys", "proc/sys") resolve under dir instead of the root: the agent
// finds the host's /proc, /sys and /proc/sys where --proc-root, --sys-root and --sysctl-root say. The longest
// mounted prefix of a path wins. It returns h.
func (h *HostFS) Mount(prefix, dir string) *HostFS {
	h.mounts[filepath.Clean(prefix)] = dir
	return h
}

// Path is the absolute path of rel.
func (h *HostFS) Path(rel string) string {
	rel = filepath.Clean(rel)
	for prefix := rel; prefix != "." && prefix != "/"; prefix = filepath.Dir(prefix) {
		if dir, ok := h.mounts[prefix]; ok {
			return filepath.Join(dir, strings.TrimPrefix(rel, prefix))
		}
	}
	return filepath.Join(h.root, rel)
}

// maxHostFile bounds a HostFS read: the files read through it (vm sysctls, resctrl schemata) are a few bytes to
// a few hundred.
const maxHostFile = 1 << 20

// ReadFile returns the content of rel without its trailing newline; a file above 1 MiB is refused (ErrTooLarge).
func (h *HostFS) ReadFile(rel string) (string, error) {
	b, err := ReadFile(h.Path(rel), maxHostFile)
	if err != nil {
		return "", h.fileError("reading", rel, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// WriteFile writes content to the existing file rel in one write.
func (h *HostFS) WriteFile(rel, content string) error {
	f, err := os.OpenFile(h.Path(rel), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return h.fileError("writing", rel, err)
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", content, h.Path(rel), err)
	}
	return nil
}

// Mkdir creates the directory rel (a resctrl group); its parent must exist. An existing directory is not an error.
func (h *HostFS) Mkdir(rel string) error {
	err := os.Mkdir(h.Path(rel), 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return fmt.Errorf("creating %s: %w", h.Path(rel), err)
}

// Remove removes the directory rel; a directory already gone is not an error.
func (h *HostFS) Remove(rel string) error {
	err := os.Remove(h.Path(rel))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("removing %s: %w", h.Path(rel), err)
}

// fileError tells a directory that is gone (fs.ErrNotExist) from a file the kernel lacks (ErrUnsupported).
func (h *HostFS) fileError(op, rel string, err error) error {
	p := h.Path(rel)
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	if _, serr := os.Stat(filepath.Dir(p)); serr != nil {
		return fmt.Errorf("%s %s: %s does not exist: %w", op, p, filepath.Dir(p), fs.ErrNotExist)
	}
	return fmt.Errorf("%s %s: this kernel lacks the file: %w", op, p, ErrUnsupported)
}
