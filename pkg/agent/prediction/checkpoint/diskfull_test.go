package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gleaner-sh/gleaner/test/ci"
)

// TestSaveOnFullDisk fills a real 64 KiB tmpfs and checks that a Save failing with ENOSPC keeps the previous
// checkpoint loadable and leaves no temporary file, and that saving works again once there is room.
func TestSaveOnFullDisk(t *testing.T) {
	dir := mountSmallTmpfs(t)
	s := open(t, dir, 1<<20) // far above the disk, so the disk fills first
	old := bytes.Repeat([]byte("old model "), 400)
	save(t, s, "pod", old)

	filler := filepath.Join(dir, "filler")
	fillDisk(t, filler)

	newer := bytes.Repeat([]byte("new model "), 800)
	err := s.Save("pod", newer)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Save on a full disk: err = %v, want one wrapping ENOSPC", err)
	}
	t.Logf("Save on a full disk: %v", err)
	if got, err := s.Load("pod"); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("Load after the failed save = %d bytes, %v; want the old %d bytes", len(got), err, len(old))
	}
	for _, f := range files(t, dir) {
		if strings.HasSuffix(f, tempExt) {
			t.Errorf("the failed save left %s behind", f)
		}
	}
	if want := int64(headerSize + len(old)); s.Size() != want {
		t.Errorf("Size after the failed save = %d, want %d", s.Size(), want)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	save(t, s, "pod", newer)
	if got, err := s.Load("pod"); err != nil || !bytes.Equal(got, newer) {
		t.Errorf("Load after freeing space = %d bytes, %v; want the new %d bytes", len(got), err, len(newer))
	}
}

// mountSmallTmpfs mounts a 64 KiB tmpfs in a temporary directory, unmounted when the test ends.
func mountSmallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		ci.Skipf(t, "mounting a tmpfs to fill needs root (uid %d)", os.Geteuid())
	}
	dir := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		ci.Skipf(t, "mounting a 64 KiB tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes to path until the file system reports ENOSPC.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	chunk := make([]byte, 4096)
	for range 1 << 10 { // 4 MiB at most: far more than the tmpfs holds
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
	t.Fatalf("wrote 4 MiB to %s without ENOSPC: the tmpfs bound did not hold", path)
}
