package prediction

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/prediction/histogram"
)

// maxModels bounds the pod models a Server keeps (the prod band and system models come on top). A node runs at most
// a few hundred pods; past the bound a new pod gets no model (it stays cold, reclaims nothing), logged once.
//
// One model takes at most about 4.7 KiB: its two histograms' weights grow only up to the highest bucket used, at
// most 219 CPU and 314 memory buckets of 8 bytes (4264 bytes), plus the two Histogram structs, the model struct and
// its map entry (under 400 bytes). maxModels models take at most about 4.7 MiB, their checkpoints (at most ~5 KiB
// each) about 5 MiB. A pod whose usage stays within a few buckets takes far less (see docs/benchmarks.md).
const maxModels = 1024

// model is the decaying CPU (cores) and memory (bytes) histograms of one pod, of the prod band or of the system part.
type model struct {
	cpu, mem *histogram.Histogram
	// created is when the model got its first samples; the model is cold until ColdStart after it.
	created time.Time
	// lastSeen is the last training round that found the pod (for the band and system models: that trained them).
	lastSeen time.Time
}

// cpuOptions are the CPU histogram's: histogram.CPUOptions with a 24-hour half-life instead of 12. A half-life
// shorter than the daily cycle lets the day's peak decay to under a quarter of the newest samples' weight by the
// time it comes round again, so in the hours before it the p95 drops a bucket below the true daily p95: replaying a
// diurnal workload (TestAccuracyDiurnal), 12 hours under-predicted on 0 to 29 % of the hours depending on where the
// truth fell in its bucket, 24 hours on at most 2 %, for the same worst error (under 10 %).
func cpuOptions() histogram.Options {
	o := histogram.CPUOptions()
	o.HalfLife = 24 * time.Hour
	return o
}

func newModel(now time.Time) *model {
	cpu, err := histogram.New(cpuOptions())
	if err != nil {
		panic(fmt.Sprintf("default CPU histogram options invalid: %v", err)) // a programmer's error
	}
	mem, err := histogram.New(histogram.MemoryOptions())
	if err != nil {
		panic(fmt.Sprintf("default memory histogram options invalid: %v", err))
	}
	now = now.Round(0)
	return &model{cpu: cpu, mem: mem, created: now, lastSeen: now}
}

// warm says the model is older than the cold-start period at now and has learned both resources: a model with no
// CPU samples would predict a peak of 0 and reclaim the whole CPU request.
func (m *model) warm(now time.Time, coldStart time.Duration) bool {
	return m != nil && now.Sub(m.created) >= coldStart && !m.cpu.IsEmpty() && !m.mem.IsEmpty()
}

// peak is the model's predicted peak: p95 of its CPU in millicores and p98 of its memory in bytes, rounded up.
func (m *model) peak() Resources {
	if m == nil {
		return Resources{}
	}
	return Resources{
		MilliCPU:    int64(math.Ceil(m.cpu.Percentile(0.95) * 1000)),
		MemoryBytes: int64(math.Ceil(m.mem.Percentile(0.98))),
	}
}

// The checkpoint payload of a model, version 1, integers little-endian:
//
//	magic "gpm" (3 bytes), version (1 byte)
//	created, lastSeen: Unix nanoseconds (int64 each)
//	CPU histogram: length (uvarint), histogram.MarshalBinary
//	memory histogram: length (uvarint), histogram.MarshalBinary
//
// The checkpoint envelope checksums the whole payload and each histogram its own encoding.
const (
	modelMagic   = "gpm"
	modelVersion = 1
)

// errModelFormat marks a payload that is not a model of this format.
var errModelFormat = errors.New("not a prediction model of this format")

func (m *model) marshal() []byte {
	cpu, _ := m.cpu.MarshalBinary() // never fails
	mem, _ := m.mem.MarshalBinary()
	b := make([]byte, 0, len(modelMagic)+1+16+2*binary.MaxVarintLen64+len(cpu)+len(mem))
	b = append(b, modelMagic...)
	b = append(b, modelVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.created.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.lastSeen.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(cpu)))
	b = append(b, cpu...)
	b = binary.AppendUvarint(b, uint64(len(mem)))
	return append(b, mem...)
}

func unmarshalModel(b []byte) (*model, error) {
	const header = len(modelMagic) + 1 + 16
	if len(b) < header || string(b[:len(modelMagic)]) != modelMagic {
		return nil, fmt.Errorf("%w: %d bytes without the model header", errModelFormat, len(b))
	}
	if v := b[len(modelMagic)]; v != modelVersion {
		return nil, fmt.Errorf("%w: version %d, this agent reads version %d", errModelFormat, v, modelVersion)
	}
	m := newModel(time.Time{})
	m.created = time.Unix(0, int64(binary.LittleEndian.Uint64(b[4:])))
	m.lastSeen = time.Unix(0, int64(binary.LittleEndian.Uint64(b[12:])))
	rest := b[header:]
	for _, h := range []struct {
		name string
		hist *histogram.Histogram
	}{{"CPU", m.cpu}, {"memory", m.mem}} {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: %s histogram length truncated or past the end", errModelFormat, h.name)
		}
		if err := h.hist.UnmarshalBinary(rest[k : k+int(n)]); err != nil {
			return nil, fmt.Errorf("reading the %s histogram: %w", h.name, err)
		}
		rest = rest[k+int(n):]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the memory histogram", errModelFormat, len(rest))
	}
	if m.cpu.Options() != cpuOptions() || m.mem.Options() != histogram.MemoryOptions() {
		// Options from another agent version: percentiles would mean something else; start that model afresh.
		return nil, fmt.Errorf("%w: histogram options differ from this agent's", errModelFormat)
	}
	return m, nil
}
