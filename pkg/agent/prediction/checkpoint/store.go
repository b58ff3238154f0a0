package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

const (
	fileExt = ".ckpt"
	tempExt = ".tmp"
	// MaxNameLen is the longest name Save accepts; with the extensions and the temporary suffix a file name stays
	// well under the 255 bytes file systems allow.
	MaxNameLen = 200
)

var (
	// ErrTooLarge is returned by Save when the new file would take the store over the bound given to Open.
	ErrTooLarge = errors.New("checkpoint store size bound exceeded")
	// ErrInvalidName is returned for a name that is empty, longer than MaxNameLen, or has a byte outside
	// [a-z0-9._-].
	ErrInvalidName = errors.New("invalid checkpoint name")
)

// Store keeps named payloads as files in one directory. Its methods are safe for concurrent use; they run one at a
// time. Only one Store may use a directory at a time: the size accounting is kept in memory from Open on.
type Store struct {
	dir      string
	maxBytes int64

	mu    sync.Mutex
	sizes map[string]int64 // name -> size of <dir>/name.ckpt
	total int64
}

// Open returns the store in dir, creating dir (mode 0700) if it is missing, removing the temporary files of
// interrupted saves, and counting the files already there. maxBytes bounds the total size of the stored files and
// must be positive. A directory already over the bound opens; Saves that would grow it are refused until Prune
// makes room.
func Open(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("opening checkpoint store %s: size bound %d is not positive", dir, maxBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating checkpoint directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing checkpoint directory: %w", err)
	}
	s := &Store{dir: dir, maxBytes: maxBytes, sizes: map[string]int64{}}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if isTemp(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("removing leftover temporary checkpoint: %w", err)
			}
			continue
		}
		name, ok := nameOf(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading size of checkpoint %s: %w", e.Name(), err)
		}
		s.sizes[name] = info.Size()
		s.total += info.Size()
	}
	return s, nil
}

// Dir returns the directory the store keeps its files in.
func (s *Store) Dir() string { return s.dir }

// Save stores payload under name, replacing what was there, atomically: after Save returns, and after a crash at
// any point of it, the file holds either the previous payload or the new one. It refuses with ErrTooLarge when the
// store would exceed its bound (the replaced file's size counted out), and with ErrInvalidName for a name outside
// [a-z0-9._-]+. A failed write (for example ENOSPC, wrapped) leaves the previous file intact and no temporary file
// behind.
func (s *Store) Save(name string, payload []byte) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	size := int64(headerSize) + int64(len(payload))
	if uint64(len(payload)) > maxPayload {
		return fmt.Errorf("saving checkpoint %q: %w: payload of %d bytes exceeds the format's 4 GiB", name, ErrTooLarge, len(payload))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if after := s.total - s.sizes[name] + size; after > s.maxBytes {
		return fmt.Errorf("saving checkpoint %q: %w: %d bytes would make %d, bound %d", name, ErrTooLarge, size, after, s.maxBytes)
	}
	path := s.path(name)
	if err := system.WriteFileAtomic(path, encode(payload), tempExt); err != nil {
		if errors.Is(err, system.ErrNotDurable) {
			s.account(name, size)
		}
		return fmt.Errorf("saving checkpoint %s: %w", path, err)
	}
	s.account(name, size)
	return nil
}

// Load returns the payload stored under name: an error wrapping fs.ErrNotExist when there is none, ErrCorrupt or
// ErrFutureFormat (with the file's path) when the file cannot be read as a checkpoint of this format.
func (s *Store) Load(name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("loading checkpoint: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(name)
}

func (s *Store) load(name string) ([]byte, error) {
	path := s.path(name)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint: %w", err)
	}
	payload, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint %s: %w", path, err)
	}
	return payload, nil
}

// LoadAll returns the payloads of every checkpoint file in the directory, by name. A file that cannot be read or
// decoded is left out and reported in errs, each error naming its file; it stays on disk until Save replaces it or
// Prune removes it.
func (s *Store) LoadAll() (payloads map[string][]byte, errs []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	payloads = map[string][]byte{}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return payloads, []error{fmt.Errorf("listing checkpoint directory: %w", err)}
	}
	for _, e := range entries {
		name, ok := nameOf(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		p, err := s.load(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		payloads[name] = p
	}
	return payloads, errs
}

// Prune removes the file of every stored name for which keep returns false (the pods that no longer exist) and
// returns how many it removed. It goes on past a file it cannot remove and returns those errors joined.
func (s *Store) Prune(keep func(name string) bool) (removed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.sizes))
	for name := range s.sizes {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		if keep(name) {
			continue
		}
		if err := os.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("pruning checkpoint: %w", err))
			continue
		}
		s.total -= s.sizes[name]
		delete(s.sizes, name)
		removed++
	}
	return removed, errors.Join(errs...)
}

// Size returns the bytes of the stored files, as the size bound counts them.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func (s *Store) account(name string, size int64) {
	s.total += size - s.sizes[name]
	s.sizes[name] = size
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name+fileExt) }

// nameOf returns the checkpoint name of a file name in the directory, and whether it is one of the store's files.
func nameOf(file string) (string, bool) {
	name, ok := strings.CutSuffix(file, fileExt)
	return name, ok && validName(name) == nil
}

// isTemp reports whether a file name is a temporary file of Save: <name>.ckpt.<random>.tmp.
func isTemp(file string) bool {
	rest, ok := strings.CutSuffix(file, tempExt)
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, fileExt+".")
	return i > 0 && validName(rest[:i]) == nil
}

func validName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: %q must have 1 to %d bytes", ErrInvalidName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("%w: %q has %q; names are [a-z0-9._-]+", ErrInvalidName, name, c)
		}
	}
	return nil
}
