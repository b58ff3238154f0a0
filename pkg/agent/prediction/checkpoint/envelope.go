package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Envelope of one file (doc.go has the table):
//
//	47 4c 43 4b  01 00  05 00 00 00  <crc32c, 4 bytes>  68 65 6c 6c 6f
//	"GLCK"       v1     length 5     of bytes 0..9+payload  "hello"

// Version is the envelope format version this package writes, and the newest it reads.
const Version = 1

const (
	magic      = "GLCK"
	headerSize = 14
	// lengthEnd is where the header's checksummed part ends: magic, version and length.
	lengthEnd = 10
)

var (
	// ErrCorrupt is returned for a file that is not a whole envelope: bad magic, a length that does not match the
	// file (truncated or trailing bytes), or a checksum mismatch.
	ErrCorrupt = errors.New("checkpoint corrupt")
	// ErrFutureFormat is returned for an envelope whose version is newer than Version.
	ErrFutureFormat = errors.New("checkpoint from a newer format version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode wraps payload in a version-1 envelope. The caller ensures len(payload) fits in 32 bits.
func encode(payload []byte) []byte {
	b := make([]byte, headerSize+len(payload))
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[4:], Version)
	binary.LittleEndian.PutUint32(b[6:], uint32(len(payload)))
	copy(b[headerSize:], payload)
	binary.LittleEndian.PutUint32(b[lengthEnd:], checksum(b[:lengthEnd], payload))
	return b
}

// decode returns the payload of an envelope. The payload aliases data.
func decode(data []byte) ([]byte, error) {
	if len(data) < len(magic)+2 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(data))
	}
	if string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorrupt, data[:len(magic)])
	}
	// The version is read before anything else is checked: a newer format may lay out the rest differently.
	switch v := binary.LittleEndian.Uint16(data[4:]); {
	case v > Version:
		return nil, fmt.Errorf("%w: version %d, this agent reads up to %d", ErrFutureFormat, v, Version)
	case v == 0:
		return nil, fmt.Errorf("%w: version 0", ErrCorrupt)
	}
	if len(data) < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(data))
	}
	n := uint64(binary.LittleEndian.Uint32(data[6:]))
	if got := uint64(len(data) - headerSize); got != n {
		return nil, fmt.Errorf("%w: header says %d payload bytes, file has %d", ErrCorrupt, n, got)
	}
	payload := data[headerSize:]
	if want, got := binary.LittleEndian.Uint32(data[lengthEnd:]), checksum(data[:lengthEnd], payload); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, header says %08x", ErrCorrupt, got, want)
	}
	return payload, nil
}

func checksum(header, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(header, castagnoli), castagnoli, payload)
}

// maxPayload is the largest payload an envelope can carry.
const maxPayload = math.MaxUint32
