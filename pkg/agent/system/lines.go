package system

import (
	"bytes"
	"iter"
)

// Lines yields the non-blank lines of b, a kernel file read whole, without their newline: the one line loop of the
// agent's parsers of cgroup, proc and pressure files. The lines share b's memory; nothing is allocated.
func Lines(b []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			line := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if !yield(line) {
				return
			}
		}
	}
}

// NextField splits the first field off b, fields being separated by spaces, tabs and newlines: the field, and the
// rest of b after it. The field is empty when b holds no more. Like Lines, it allocates nothing.
func NextField(b []byte) (field, rest []byte) {
	b = bytes.TrimLeft(b, " \t\n")
	i := bytes.IndexAny(b, " \t\n")
	if i < 0 {
		i = len(b)
	}
	return b[:i], b[i:]
}
