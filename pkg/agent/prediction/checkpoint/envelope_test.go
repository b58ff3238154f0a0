package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestEncodeLayout(t *testing.T) {
	got := encode([]byte("hello"))
	want := []byte{'G', 'L', 'C', 'K', 1, 0, 5, 0, 0, 0}
	if !bytes.Equal(got[:lengthEnd], want) {
		t.Fatalf("header = % x, want % x", got[:lengthEnd], want)
	}
	// CRC32C of "GLCK\x01\x00\x05\x00\x00\x00hello", computed independently of checksum's two-step update.
	if crc := binary.LittleEndian.Uint32(got[lengthEnd:]); crc != crcOf(append(want, "hello"...)) {
		t.Errorf("checksum = %08x, want %08x", crc, crcOf(append(want, "hello"...)))
	}
	if string(got[headerSize:]) != "hello" || len(got) != headerSize+5 {
		t.Errorf("payload part = %q (file %d bytes)", got[headerSize:], len(got))
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte{0xff, 0}, 3000)} {
		got, err := decode(encode(payload))
		if err != nil {
			t.Fatalf("decode(encode(%d bytes)): %v", len(payload), err)
		}
		if !bytes.Equal(got, payload) {
			t.Errorf("round trip of %d bytes gave %d different bytes", len(payload), len(got))
		}
	}
}

func TestDecodeTruncatedAtEveryLength(t *testing.T) {
	full := encode([]byte("a payload of some length, long enough to cut in many places"))
	for n := 0; n < len(full); n++ {
		if _, err := decode(full[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode of the first %d of %d bytes: err = %v, want ErrCorrupt", n, len(full), err)
		}
	}
	if _, err := decode(append(full, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decode with a trailing byte: err = %v, want ErrCorrupt", err)
	}
}

// Every single-bit flip anywhere in a file is caught: in the version field as a future or zero version, anywhere
// else as ErrCorrupt.
func TestDecodeEveryBitFlip(t *testing.T) {
	full := encode([]byte("model weights"))
	for i := range full {
		for bit := range 8 {
			b := bytes.Clone(full)
			b[i] ^= 1 << bit
			_, err := decode(b)
			inVersion := i == 4 || i == 5
			switch {
			case err == nil:
				t.Errorf("byte %d bit %d flipped: decoded without error", i, bit)
			case !inVersion && !errors.Is(err, ErrCorrupt):
				t.Errorf("byte %d bit %d flipped: err = %v, want ErrCorrupt", i, bit, err)
			case inVersion && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFutureFormat):
				t.Errorf("byte %d bit %d flipped: err = %v, want ErrCorrupt or ErrFutureFormat", i, bit, err)
			}
		}
	}
}

func TestDecodeVersions(t *testing.T) {
	tests := []struct {
		name    string
		version uint16
		// rest replaces everything after the version: a newer format may lay it out differently.
		rest    []byte
		wantErr error
	}{
		{name: "version 2, v1 layout and valid checksum", version: 2, wantErr: ErrFutureFormat},
		{name: "version 2, a layout this agent cannot read", version: 2, rest: []byte{1, 2, 3}, wantErr: ErrFutureFormat},
		{name: "version 65535, nothing after it", version: 0xffff, rest: []byte{}, wantErr: ErrFutureFormat},
		{name: "version 0", version: 0, wantErr: ErrCorrupt},
		{name: "version 1", version: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := withVersion(encode([]byte("payload")), tt.version)
			if tt.rest != nil {
				b = append(b[:6], tt.rest...)
			}
			payload, err := decode(b)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && string(payload) != "payload" {
				t.Errorf("payload = %q", payload)
			}
		})
	}
}

func TestDecodeBadMagic(t *testing.T) {
	b := encode([]byte("p"))
	copy(b, "GLCX")
	if _, err := decode(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want ErrCorrupt", err)
	}
}

// FuzzDecode: decode never panics, and what it accepts is exactly what encode writes for the payload it returns.
func FuzzDecode(f *testing.F) {
	f.Add(encode(nil))
	f.Add(encode([]byte("a model")))
	f.Add(withVersion(encode([]byte("future")), 2))
	f.Add([]byte("GLCK"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		payload, err := decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFutureFormat) {
				t.Fatalf("decode error %v is neither ErrCorrupt nor ErrFutureFormat", err)
			}
			return
		}
		if again := encode(payload); !bytes.Equal(again, data) {
			t.Fatalf("decode accepted % x, but encode of its payload is % x", data, again)
		}
	})
}

// withVersion returns b with its version field set to v and the checksum recomputed, as a writer of format v
// with the v1 layout would have written it.
func withVersion(b []byte, v uint16) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint16(b[4:], v)
	binary.LittleEndian.PutUint32(b[lengthEnd:], checksum(b[:lengthEnd], b[headerSize:]))
	return b
}

// crcOf is a bitwise CRC32C (reflected polynomial 0x82F63B78), independent of hash/crc32's tables.
func crcOf(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}
