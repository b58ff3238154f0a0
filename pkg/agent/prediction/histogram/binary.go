package histogram

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"
)

// The encoding, version 1, all integers little-endian:
//
//	magic "ghst" (4 bytes), version (1 byte)
//	First, Ratio, MaxValue (float64 bits, 8 bytes each), HalfLife (int64 nanoseconds)
//	reference time: Unix seconds (int64), nanoseconds (uint32); both 0 for an empty histogram
//	count of non-empty buckets (uvarint), then for each, in increasing order:
//	  the gap from the previous bucket's index + 1 (uvarint; the first bucket's index itself), its weight (float64 bits)
//	CRC-32C of everything before it (uint32)
//
// A varint must be minimal, so that one histogram has exactly one encoding.
const (
	magic      = "ghst"
	version    = 1
	headerSize = len(magic) + 1 + 3*8 + 8 + 8 + 4
	crcSize    = 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrUnsupportedVersion is returned (wrapped) by UnmarshalBinary for an encoding of another format version, such as
// one written by a newer agent.
var ErrUnsupportedVersion = errors.New("unsupported histogram encoding version")

// ErrCorrupt is returned (wrapped) by UnmarshalBinary for a buffer that is not a valid histogram: truncated, not a
// histogram at all, failing its checksum, or holding values a histogram cannot have.
var ErrCorrupt = errors.New("corrupt histogram encoding")

// MarshalBinary encodes the histogram compactly: its options, reference time and non-empty buckets (9 bytes each,
// 10 after a gap of 128 or more), 54 bytes for an empty histogram. It never fails.
func (h *Histogram) MarshalBinary() ([]byte, error) {
	count := 0
	for _, w := range h.weights {
		if w != 0 {
			count++
		}
	}
	b := make([]byte, 0, headerSize+binary.MaxVarintLen64+count*(2+8)+crcSize)
	b = append(b, magic...)
	b = append(b, version)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.opts.First))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.opts.Ratio))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.opts.MaxValue))
	b = binary.LittleEndian.AppendUint64(b, uint64(h.opts.HalfLife))
	var sec int64
	var nsec uint32
	if count > 0 {
		sec, nsec = h.ref.Unix(), uint32(h.ref.Nanosecond())
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(sec))
	b = binary.LittleEndian.AppendUint32(b, nsec)
	b = binary.AppendUvarint(b, uint64(count))
	next := 0
	for i, w := range h.weights {
		if w == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-next))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
		next = i + 1
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

// UnmarshalBinary replaces the histogram with the one encoded in b. It refuses, wrapping ErrUnsupportedVersion or
// ErrCorrupt, a buffer of another version, a truncated or otherwise damaged one, and one whose options fail
// Validate; on any error the histogram is left as it was.
func (h *Histogram) UnmarshalBinary(b []byte) error {
	dec, err := decode(b)
	if err != nil {
		return fmt.Errorf("decoding histogram (%d bytes): %w", len(b), err)
	}
	*h = *dec
	return nil
}

// reader reads the fields of an encoding in order and remembers the first error.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b)-r.off < n {
		r.err = fmt.Errorf("%w: truncated at byte %d reading %s", ErrCorrupt, len(r.b), what)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) uint64(what string) uint64 {
	if s := r.take(8, what); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *reader) float64(what string) float64 {
	return math.Float64frombits(r.uint64(what))
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = fmt.Errorf("%w: truncated at byte %d reading %s", ErrCorrupt, len(r.b), what)
	case n < 0:
		r.err = fmt.Errorf("%w: %s at byte %d overflows 64 bits", ErrCorrupt, what, r.off)
	case n != binary.PutUvarint(make([]byte, binary.MaxVarintLen64), v):
		r.err = fmt.Errorf("%w: %s at byte %d is not a minimal varint", ErrCorrupt, what, r.off)
	default:
		r.off += n
	}
	return v
}

// decode parses and checks a whole encoding.
func decode(b []byte) (*Histogram, error) {
	r := &reader{b: b}
	h, count, err := decodeHeader(r)
	if err != nil {
		return nil, err
	}
	if err := decodeBuckets(r, h, count); err != nil {
		return nil, err
	}
	body := r.off
	if s := r.take(crcSize, "checksum"); s != nil {
		if want, got := binary.LittleEndian.Uint32(s), crc32.Checksum(b[:body], crcTable); want != got {
			return nil, fmt.Errorf("%w: checksum %#08x, the content sums to %#08x", ErrCorrupt, want, got)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, len(b)-r.off)
	}
	return h, nil
}

// decodeHeader reads everything before the buckets: an empty histogram with its options and reference time, and
// the count of non-empty buckets.
func decodeHeader(r *reader) (*Histogram, uint64, error) {
	if m := r.take(len(magic), "magic"); m != nil && string(m) != magic {
		return nil, 0, fmt.Errorf("%w: magic %q is not %q", ErrCorrupt, m, magic)
	}
	if v := r.take(1, "version"); v != nil && v[0] != version {
		return nil, 0, fmt.Errorf("%w: version %d, this agent reads version %d", ErrUnsupportedVersion, v[0], version)
	}
	o := Options{First: r.float64("first bucket bound"), Ratio: r.float64("bucket ratio"), MaxValue: r.float64("max value")}
	o.HalfLife = time.Duration(r.uint64("half-life"))
	sec := int64(r.uint64("reference time"))
	var nsec uint32
	if s := r.take(4, "reference time"); s != nil {
		nsec = binary.LittleEndian.Uint32(s)
	}
	count := r.uvarint("bucket count")
	if r.err != nil {
		return nil, 0, r.err
	}
	if err := o.Validate(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	h := &Histogram{opts: o, numBuckets: o.NumBuckets()}
	switch {
	case count > uint64(h.numBuckets):
		return nil, 0, fmt.Errorf("%w: %d non-empty buckets, the options have %d", ErrCorrupt, count, h.numBuckets)
	case nsec >= uint32(time.Second):
		return nil, 0, fmt.Errorf("%w: reference time nanoseconds %d are a second or more", ErrCorrupt, nsec)
	case count == 0 && (sec != 0 || nsec != 0):
		return nil, 0, fmt.Errorf("%w: an empty histogram has a reference time", ErrCorrupt)
	case count > 0:
		h.ref = time.Unix(sec, int64(nsec))
	}
	return h, count, nil
}

// decodeBuckets reads count non-empty buckets into h.
func decodeBuckets(r *reader, h *Histogram, count uint64) error {
	type bucket struct {
		i uint64
		w float64
	}
	buckets := make([]bucket, 0, count)
	next := uint64(0)
	for k := uint64(0); k < count; k++ {
		gap := r.uvarint("bucket index")
		w := r.float64("bucket weight")
		if r.err != nil {
			return r.err
		}
		if gap >= uint64(h.numBuckets)-next {
			return fmt.Errorf("%w: bucket %d of %d lies past the last bucket %d", ErrCorrupt, k, count, h.numBuckets-1)
		}
		i := next + gap
		if !(w > 0) || math.IsInf(w, 0) {
			return fmt.Errorf("%w: bucket %d has weight %v, not a positive finite number", ErrCorrupt, i, w)
		}
		buckets = append(buckets, bucket{i, w})
		next = i + 1
	}
	if count == 0 {
		return nil
	}
	h.weights = make([]float64, next)
	for _, bk := range buckets {
		h.weights[bk.i] = bk.w
	}
	if math.IsInf(h.TotalWeight(), 0) {
		return fmt.Errorf("%w: the weights sum to infinity", ErrCorrupt)
	}
	return nil
}
