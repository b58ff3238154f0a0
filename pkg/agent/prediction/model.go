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
// One model takes at most about 7.4 KiB: its two histograms' weights grow only up to the highest bucket used, at
// most 219 CPU and 314 memory buckets of 8 bytes (4264 bytes), its two rings of hourly peaks take 2 x 169 x 8 bytes
// (2704), plus the two Histogram structs, the model struct and its map entry (under 450 bytes). maxModels models
// take at most about 7.4 MiB, their checkpoints (at most ~7.5 KiB each) about 7.5 MiB. A pod whose usage stays
// within a few buckets takes far less in its histograms (see docs/benchmarks.md).
const maxModels = 1024

// model is what one pod, the prod band or the system part used: the hourly peaks of its CPU (cores) and memory
// (bytes), which the predicted peak is read from, and the decaying histograms of both, which stand in for the
// history the hourly peaks lack in a model read from a checkpoint of the format before them (version 1).
type model struct {
	cpu, mem           *histogram.Histogram
	cpuPeaks, memPeaks hourlyPeaks
	// created is when the model got its first samples; the model is cold until ColdStart after it.
	created time.Time
	// lastSeen is the last training round that found the pod (for the band and system models: that trained them).
	lastSeen time.Time
}

// cpuOptions are the CPU histogram's: histogram.CPUOptions with a 24-hour half-life instead of 12. A half-life
// shorter than the daily cycle lets the day's peak decay to under a quarter of the newest samples' weight by the
// time it comes round again, so in the hours before it the p95 drops a bucket below the true daily p95. The
// histograms no longer make the prediction once a model has a day of hourly peaks (model.peak); their options stay
// those of the version 1 checkpoints they are read from.
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

// peak is the model's predicted peak at now, CPU in millicores and memory in bytes, rounded up: per resource the
// larger of the largest sample of the last 25 hours (this hour and the 24 before it) and the largest of the three
// hours starting a week ago (hourlyPeaks.forecast). While the hourly peaks span less than a day (a model read
// from a version 1 checkpoint) it is at least the histogram's p95 of CPU and p98 of memory, the prediction of that
// version, so that an upgrade does not drop what the model had learned.
func (m *model) peak(now time.Time) Resources {
	if m == nil {
		return Resources{}
	}
	cpu, mem := m.cpuPeaks.forecast(now), m.memPeaks.forecast(now)
	if !m.cpuPeaks.coversDay(now) {
		cpu = max(cpu, m.cpu.Percentile(0.95))
	}
	if !m.memPeaks.coversDay(now) {
		mem = max(mem, m.mem.Percentile(0.98))
	}
	return Resources{MilliCPU: int64(math.Ceil(cpu * 1000)), MemoryBytes: int64(math.Ceil(mem))}
}

// typicalPeak is the histograms' p95 of CPU in millicores and p98 of memory in bytes, rounded up: the prediction of
// the system part (Server.Prediction says why it is not peak).
func (m *model) typicalPeak() Resources {
	if m == nil {
		return Resources{}
	}
	return Resources{
		MilliCPU:    int64(math.Ceil(m.cpu.Percentile(0.95) * 1000)),
		MemoryBytes: int64(math.Ceil(m.mem.Percentile(0.98))),
	}
}

// learnCPU and learnMem count samples taken in the training round that ends at now: each goes into the histogram at
// now (samples of one round are at most a training interval old, so counting them at now instead of their own time
// changes their weight by under 0.2 %), their largest into the hourly peaks of the hour the round ends in (a round
// spans at most its interval, so a peak counts at most one interval late, which keeps it in the windows longer).
func (m *model) learnCPU(vs []float64, now time.Time) { learn(m.cpu, &m.cpuPeaks, vs, now) }
func (m *model) learnMem(vs []float64, now time.Time) { learn(m.mem, &m.memPeaks, vs, now) }

func learn(h *histogram.Histogram, p *hourlyPeaks, vs []float64, now time.Time) {
	if len(vs) == 0 {
		return
	}
	top := math.Inf(-1)
	for _, v := range vs {
		h.Add(v, 1, now)
		if !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	// The round's samples are (start, now]: the hour that holds the last instant before now.
	p.record(now.Add(-time.Nanosecond), top)
}

// The checkpoint payload of a model, version 2, integers little-endian:
//
//	magic "gpm" (3 bytes), version (1 byte)
//	created, lastSeen: Unix nanoseconds (int64 each)
//	CPU histogram: length (uvarint), histogram.MarshalBinary
//	memory histogram: length (uvarint), histogram.MarshalBinary
//	CPU hourly peaks, memory hourly peaks: hourlyPeaks.appendBinary
//
// Version 1 is the same without the hourly peaks; it is still read (the model then has none, and its histograms
// stand in until it has a day of them). The checkpoint envelope checksums the whole payload and each histogram its
// own encoding.
const (
	modelMagic     = "gpm"
	modelVersion   = 2
	modelVersionV1 = 1
)

// errModelFormat marks a payload that is not a model of this format.
var errModelFormat = errors.New("not a prediction model of this format")

func (m *model) marshal() []byte {
	cpu, _ := m.cpu.MarshalBinary() // never fails
	mem, _ := m.mem.MarshalBinary()
	b := make([]byte, 0, len(modelMagic)+1+16+2*binary.MaxVarintLen64+len(cpu)+len(mem)+m.cpuPeaks.binarySize()+m.memPeaks.binarySize())
	b = append(b, modelMagic...)
	b = append(b, modelVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.created.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.lastSeen.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(cpu)))
	b = append(b, cpu...)
	b = binary.AppendUvarint(b, uint64(len(mem)))
	b = append(b, mem...)
	b = m.cpuPeaks.appendBinary(b)
	return m.memPeaks.appendBinary(b)
}

func unmarshalModel(b []byte) (*model, error) {
	const header = len(modelMagic) + 1 + 16
	if len(b) < header || string(b[:len(modelMagic)]) != modelMagic {
		return nil, fmt.Errorf("%w: %d bytes without the model header", errModelFormat, len(b))
	}
	version := b[len(modelMagic)]
	if version != modelVersion && version != modelVersionV1 {
		return nil, fmt.Errorf("%w: version %d, this agent reads versions %d and %d", errModelFormat, version, modelVersionV1, modelVersion)
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
	if version >= 2 {
		var err error
		if rest, err = m.cpuPeaks.readBinary(rest); err != nil {
			return nil, fmt.Errorf("reading the CPU hourly peaks: %w", err)
		}
		if rest, err = m.memPeaks.readBinary(rest); err != nil {
			return nil, fmt.Errorf("reading the memory hourly peaks: %w", err)
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the model", errModelFormat, len(rest))
	}
	if m.cpu.Options() != cpuOptions() || m.mem.Options() != histogram.MemoryOptions() {
		// Options from another agent version: percentiles would mean something else; start that model afresh.
		return nil, fmt.Errorf("%w: histogram options differ from this agent's", errModelFormat)
	}
	return m, nil
}
