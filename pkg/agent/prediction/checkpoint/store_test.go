package checkpoint

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func open(t testing.TB, dir string, maxBytes int64) *Store {
	t.Helper()
	s, err := Open(dir, maxBytes)
	if err != nil {
		t.Fatalf("Open(%s, %d): %v", dir, maxBytes, err)
	}
	return s
}

func save(t testing.TB, s *Store, name string, payload []byte) {
	t.Helper()
	if err := s.Save(name, payload); err != nil {
		t.Fatalf("Save(%q): %v", name, err)
	}
}

// files lists the directory's file names, sorted.
func files(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestOpenCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "checkpoints")
	s := open(t, dir, 1<<20)
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode = %o, want 700", perm)
	}
	if s.Size() != 0 {
		t.Errorf("Size of an empty store = %d", s.Size())
	}
	save(t, s, "system", []byte("x"))
	info, err = os.Stat(filepath.Join(dir, "system.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode = %o, want 600", perm)
	}
}

func TestOpenRefusesBadArguments(t *testing.T) {
	for _, maxBytes := range []int64{0, -1} {
		if _, err := Open(t.TempDir(), maxBytes); err == nil {
			t.Errorf("Open with maxBytes %d: no error", maxBytes)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, 1<<20); err == nil {
		t.Error("Open on a regular file: no error")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	want := map[string][]byte{
		"0f8fad5b-d9cb-469f-a165-70867728950e": bytes.Repeat([]byte{1, 2, 3}, 1000),
		"system":                               []byte("system model"),
		"priority-prod":                        {},
		"a.b_c-1":                              {0},
	}
	for name, p := range want {
		save(t, s, name, p)
	}
	save(t, s, "system", []byte("system model, second save")) // replaces
	want["system"] = []byte("system model, second save")

	for name, p := range want {
		got, err := s.Load(name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if !bytes.Equal(got, p) {
			t.Errorf("Load(%q) = %d bytes, want the %d saved", name, len(got), len(p))
		}
	}
	var wantSize int64
	for _, p := range want {
		wantSize += headerSize + int64(len(p))
	}
	if s.Size() != wantSize {
		t.Errorf("Size = %d, want %d", s.Size(), wantSize)
	}

	// A new store on the same directory (the agent restarted) sees the same payloads and size.
	s2 := open(t, dir, 1<<20)
	got, errs := s2.LoadAll()
	if len(errs) != 0 {
		t.Fatalf("LoadAll after reopening: %v", errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadAll after reopening (-want +got):\n%s", diff)
	}
	if s2.Size() != wantSize {
		t.Errorf("Size after reopening = %d, want %d", s2.Size(), wantSize)
	}
}

func TestLoadMissing(t *testing.T) {
	s := open(t, t.TempDir(), 1<<20)
	if _, err := s.Load("absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing name: err = %v, want fs.ErrNotExist", err)
	}
}

func TestLoadTruncatedFileAtEveryLength(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	payload := []byte("a model that the agent was writing when the node lost power")
	save(t, s, "pod", payload)
	path := filepath.Join(dir, "pod.ckpt")
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(full); n++ {
		if err := os.Truncate(path, int64(n)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Load("pod")
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("file cut to %d of %d bytes: err = %v, want ErrCorrupt", n, len(full), err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q does not name the file %s", err, path)
		}
	}
	// The next save replaces the damaged file.
	save(t, s, "pod", payload)
	if got, err := s.Load("pod"); err != nil || !bytes.Equal(got, payload) {
		t.Errorf("Load after saving over the truncated file = %q, %v", got, err)
	}
}

func TestLoadFlippedByte(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	save(t, s, "pod", bytes.Repeat([]byte("model"), 100))
	path := filepath.Join(dir, "pod.ckpt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+250] ^= 0x10
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("pod"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want ErrCorrupt", err)
	}
}

func TestLoadFutureFormat(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	path := filepath.Join(dir, "system.ckpt")
	if err := os.WriteFile(path, withVersion(encode([]byte("from a newer agent")), Version+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load("system")
	if !errors.Is(err, ErrFutureFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want ErrFutureFormat naming %s", err, path)
	}
}

func TestBadNamesRefused(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	for _, name := range []string{"", "System", "a/b", "../escape", "a b", "pod\x00", "ü", strings.Repeat("a", MaxNameLen+1)} {
		if err := s.Save(name, []byte("x")); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Save(%q): err = %v, want ErrInvalidName", name, err)
		}
		if _, err := s.Load(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Load(%q): err = %v, want ErrInvalidName", name, err)
		}
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("refused saves left files: %v", got)
	}
	save(t, s, strings.Repeat("a", MaxNameLen), []byte("the longest name works"))
}

func TestSizeBound(t *testing.T) {
	dir := t.TempDir()
	const bound = 3 * (headerSize + 100)
	s := open(t, dir, bound)
	p100 := bytes.Repeat([]byte{7}, 100)
	for _, name := range []string{"a", "b", "c"} {
		save(t, s, name, p100)
	}
	if s.Size() != bound {
		t.Fatalf("Size = %d, want %d", s.Size(), bound)
	}
	err := s.Save("d", []byte{1})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Save over the bound: err = %v, want ErrTooLarge", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d.ckpt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused save left a file: %v", err)
	}
	// Replacing a file counts its old size out: the same size fits, a smaller one fits, one byte more does not.
	save(t, s, "a", bytes.Repeat([]byte{8}, 100))
	save(t, s, "b", bytes.Repeat([]byte{8}, 40))
	if err := s.Save("c", bytes.Repeat([]byte{8}, 161)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("growing c past the bound: err = %v, want ErrTooLarge", err)
	}
	save(t, s, "c", bytes.Repeat([]byte{8}, 160))
	if s.Size() != bound {
		t.Errorf("Size = %d, want %d", s.Size(), bound)
	}
	if got, _ := s.Load("c"); len(got) != 160 {
		t.Errorf("c holds %d bytes, want 160", len(got))
	}
	// Pruning makes room.
	if _, err := s.Prune(func(name string) bool { return name != "c" }); err != nil {
		t.Fatal(err)
	}
	save(t, s, "d", []byte{1})

	// A directory already over a (lowered) bound opens; a save that does not grow it is allowed, one that does is not.
	small := open(t, dir, 10)
	if small.Size() != s.Size() {
		t.Errorf("reopened Size = %d, want %d", small.Size(), s.Size())
	}
	if err := small.Save("e", nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Save into a store over its bound: err = %v, want ErrTooLarge", err)
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	for _, name := range []string{"pod-a", "pod-b", "pod-c", "system"} {
		save(t, s, name, []byte(name))
	}
	foreign := filepath.Join(dir, "README")
	if err := os.WriteFile(foreign, []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{"pod-b": true, "system": true}
	var asked []string
	removed, err := s.Prune(func(name string) bool {
		asked = append(asked, name)
		return running[name]
	})
	if err != nil || removed != 2 {
		t.Fatalf("Prune = %d, %v; want 2, nil", removed, err)
	}
	if want := []string{"pod-a", "pod-b", "pod-c", "system"}; !slices.Equal(asked, want) {
		t.Errorf("keep asked about %v, want %v", asked, want)
	}
	if diff := cmp.Diff([]string{"README", "pod-b.ckpt", "system.ckpt"}, files(t, dir)); diff != "" {
		t.Errorf("files after Prune (-want +got):\n%s", diff)
	}
	if want := int64(2*headerSize + len("pod-b") + len("system")); s.Size() != want {
		t.Errorf("Size after Prune = %d, want %d", s.Size(), want)
	}
	if removed, err := s.Prune(func(string) bool { return true }); removed != 0 || err != nil {
		t.Errorf("Prune keeping all = %d, %v", removed, err)
	}
}

func TestOpenRemovesTemporaryLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	save(t, s, "pod", []byte("saved"))
	// What an interrupted Save leaves: a temporary file, possibly half written.
	leftovers := []string{"pod.ckpt.123456.tmp", "system.ckpt.9.tmp"}
	for _, f := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("GLCK\x01"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Not the store's: left alone.
	for _, f := range []string{"notes.tmp", "Other.ckpt.1.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, dir, 1<<20)
	if diff := cmp.Diff([]string{"Other.ckpt.1.tmp", "notes.tmp", "pod.ckpt"}, files(t, dir)); diff != "" {
		t.Errorf("files after Open (-want +got):\n%s", diff)
	}
	if want := int64(headerSize + len("saved")); s.Size() != want {
		t.Errorf("Size = %d, want %d (temporary files are not counted)", s.Size(), want)
	}
}

func TestLoadAllMixOfGoodAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	save(t, s, "good-1", []byte("one"))
	save(t, s, "good-2", []byte("two"))
	save(t, s, "truncated", []byte("will be cut"))
	save(t, s, "flipped", []byte("will be flipped"))
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("truncated.ckpt", encode([]byte("will be cut"))[:headerSize+3])
	flipped := encode([]byte("will be flipped"))
	flipped[headerSize] ^= 1
	write("flipped.ckpt", flipped)
	write("future.ckpt", withVersion(encode([]byte("v2")), 2))
	write("empty.ckpt", nil)
	write("README", []byte("ignored"))
	write("Upper.ckpt", []byte("ignored: not a valid name"))
	if err := os.Mkdir(filepath.Join(dir, "sub.ckpt"), 0o700); err != nil {
		t.Fatal(err)
	}

	got, errs := s.LoadAll()
	want := map[string][]byte{"good-1": []byte("one"), "good-2": []byte("two")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadAll payloads (-want +got):\n%s", diff)
	}
	wantErrs := map[string]error{
		"truncated.ckpt": ErrCorrupt, "flipped.ckpt": ErrCorrupt, "empty.ckpt": ErrCorrupt, "future.ckpt": ErrFutureFormat,
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("LoadAll reported %d errors, want %d: %v", len(errs), len(wantErrs), errs)
	}
	for _, err := range errs {
		matched := false
		for file, sentinel := range wantErrs {
			if strings.Contains(err.Error(), filepath.Join(dir, file)) {
				matched = true
				if !errors.Is(err, sentinel) {
					t.Errorf("error for %s = %v, want %v", file, err, sentinel)
				}
			}
		}
		if !matched {
			t.Errorf("error %v names none of the bad files", err)
		}
	}
}

// BenchmarkSave4KiB measures one Save of a 4 KiB payload: write, fsync, rename, fsync of the directory.
func BenchmarkSave4KiB(b *testing.B) {
	s := open(b, b.TempDir(), 1<<20)
	payload := bytes.Repeat([]byte{0xa5}, 4096)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := s.Save("pod", payload); err != nil {
			b.Fatal(err)
		}
	}
}
