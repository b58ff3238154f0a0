package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// openFiles keeps cgroup files open between reads. The kernel regenerates a cgroup file on every read from offset
// 0, so a kept file is re-read with one pread instead of open, read and close; on a node with 200 pods that is
// most of the agent's collection cost (about 1,500 files a second). Files not read between two sweeps are closed,
// so a cgroup that is gone is never pinned for long, and at most max files are kept.
//
// A kept file of a removed cgroup fails its read (ENODEV on kernfs); the entry is dropped and the path opened
// again, which then reports the cgroup as gone. On a regular file system (fixture trees) a kept file keeps reading
// its old contents after the file is deleted or replaced, so fixtures that change must be rewritten in place.
type openFiles struct {
	max int

	mu    sync.Mutex
	files map[fileKey]*openFile
}

// fileKey names a file by its cgroup and value, so a kept file is found without building its path.
type fileKey struct {
	dir string
	fl  file
}

type openFile struct {
	fd   int
	used bool // read since the last sweep
	refs int  // reads in flight
	dead bool // dropped: close when refs reaches 0
}

func newOpenFiles(max int) *openFiles { return &openFiles{max: max, files: map[fileKey]*openFile{}} }

// read appends the contents of the file of key to buf, from a kept file when there is one; path builds the file's
// path when it has to be opened.
func (o *openFiles) read(key fileKey, path func() string, buf []byte) ([]byte, error) {
	if of := o.acquire(key); of != nil {
		b, err := preadAll(of.fd, buf)
		o.release(of)
		if err == nil {
			return b, nil
		}
		o.drop(key, of)
	}
	p := path()
	fd, err := openRetry(p)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	b, err := preadAll(fd, buf)
	if err != nil {
		_ = syscall.Close(fd)
		return b, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	if !o.keep(key, fd) {
		_ = syscall.Close(fd)
	}
	return b, nil
}

func (o *openFiles) acquire(key fileKey) *openFile {
	o.mu.Lock()
	defer o.mu.Unlock()
	of := o.files[key]
	if of == nil {
		return nil
	}
	of.used = true
	of.refs++
	return of
}

func (o *openFiles) release(of *openFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	of.refs--
	if of.dead && of.refs == 0 {
		_ = syscall.Close(of.fd)
	}
}

// drop forgets key's kept file; it is closed once no read uses it.
func (o *openFiles) drop(key fileKey, of *openFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files[key] != of || of.dead {
		return
	}
	delete(o.files, key)
	of.dead = true
	if of.refs == 0 {
		_ = syscall.Close(of.fd)
	}
}

// keep stores fd for key unless the cache is full or another read stored one first.
func (o *openFiles) keep(key fileKey, fd int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.files[key]; ok || len(o.files) >= o.max {
		return false
	}
	o.files[key] = &openFile{fd: fd, used: true}
	return true
}

// sweep closes the files not read since the previous sweep and returns how many.
func (o *openFiles) sweep() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for k, of := range o.files {
		if of.used {
			of.used = false
			continue
		}
		delete(o.files, k)
		of.dead = true
		if of.refs == 0 {
			_ = syscall.Close(of.fd)
		}
		n++
	}
	return n
}

// closeAll closes every kept file.
func (o *openFiles) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, of := range o.files {
		delete(o.files, k)
		of.dead = true
		if of.refs == 0 {
			_ = syscall.Close(of.fd)
		}
	}
}

func (o *openFiles) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.files)
}

// preadAll appends the file's contents from offset 0 to buf; a read that does not fill the buffer is the end
// (kernfs and regular files return everything they have).
// maxFileSize bounds a cgroup file read: the largest the agent reads (memory.stat, a v2 io.max with every disk)
// are a few KiB, and a file that keeps growing (a fixture gone wrong, a kernel bug) must not take the agent's
// memory with it.
const maxFileSize = 1 << 20

// errFileTooLarge is returned for a file above maxFileSize.
var errFileTooLarge = fmt.Errorf("%w: larger than %d bytes, not read", system.ErrTooLarge, maxFileSize)

func preadAll(fd int, buf []byte) ([]byte, error) {
	start := len(buf)
	for {
		if len(buf)-start > maxFileSize {
			return buf[:start], errFileTooLarge
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Pread(fd, buf[len(buf):cap(buf)], int64(len(buf)-start))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return buf[:start], err
		}
		buf = buf[:len(buf)+n]
		if n == 0 || len(buf) < cap(buf) {
			return buf, nil
		}
	}
}

func openRetry(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}
