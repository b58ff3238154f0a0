package system

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge says a kernel file was larger than its reader's bound and was not read whole. procfs, sysfs and
// cgroupfs files report a size of 0 or 4096, so the size is only learnt by reading, and a file that keeps growing
// (a fixture gone wrong, a kernel bug, a hostile mount) must not take the agent's memory or time with it. Each
// reader's bound is a comfortable multiple of the largest file a kernel writes, stated where it is set.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the file at path whole, or fails with an error wrapping ErrTooLarge once it has read limit bytes
// and the file goes on.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return io.ReadAll(LimitReader(f, limit))
}

// LimitReader reads from r up to limit bytes, then fails with an error wrapping ErrTooLarge if r has more (unlike
// io.LimitReader, which ends quietly and lets a parser take a truncated file for a whole one). A parser that stops
// early (the CPU lines of /proc/stat) never sees the error.
func LimitReader(r io.Reader, limit int64) io.Reader {
	return &limitedReader{r: r, left: limit, limit: limit}
}

type limitedReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if l.left <= 0 {
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: larger than %d bytes, not read", ErrTooLarge, l.limit)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
