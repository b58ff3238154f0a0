package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
)

// workingSet is a file the service reads a random piece of per request: its page cache is the service's working
// set.
type workingSet struct {
	f      *os.File
	size   int64
	piece  int64
	buffer chan []byte // one buffer per concurrent read
}

// newWorkingSet writes a file of mib MiB at path and opens it for reads of readKiB KiB.
func newWorkingSet(path string, mib, readKiB int) (*workingSet, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the working set: %w", err)
	}
	chunk := bytes.Repeat([]byte("lsservice data  "), 1<<16) // 1 MiB
	for range mib {
		if _, err := f.Write(chunk); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("writing the working set: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing the working set: %w", err)
	}
	return &workingSet{f: f, size: int64(mib) << 20, piece: int64(readKiB) << 10, buffer: make(chan []byte, 16)}, nil
}

// read reads one piece at a random page-aligned place.
func (w *workingSet) read() error {
	var b []byte
	select {
	case b = <-w.buffer:
	default:
		b = make([]byte, w.piece)
	}
	defer func() {
		select {
		case w.buffer <- b:
		default:
		}
	}()
	off := rand.Int64N((w.size-w.piece)/4096+1) * 4096
	if _, err := w.f.ReadAt(b, off); err != nil {
		return fmt.Errorf("reading the working set at %d: %w", off, err)
	}
	return nil
}

// Close closes the file.
func (w *workingSet) Close() error { return w.f.Close() }
