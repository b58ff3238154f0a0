package prediction

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// hour is the start of the Unix hour h hours after t0 (t0 is a whole hour).
func hour(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }

func TestHourlyPeaksForecast(t *testing.T) {
	type rec struct {
		at time.Time
		v  float64
	}
	tests := []struct {
		name string
		recs []rec
		now  time.Time
		want float64
	}{
		{name: "empty", now: hour(0), want: 0},
		{name: "the largest sample of the hour", recs: []rec{{hour(0), 1}, {hour(0).Add(30 * time.Minute), 3}, {hour(0).Add(59 * time.Minute), 2}}, now: hour(0).Add(59 * time.Minute), want: 3},
		{name: "NaN and infinity ignored, negative counts as 0", recs: []rec{{hour(0), math.NaN()}, {hour(0), math.Inf(1)}, {hour(0), -1}}, now: hour(0), want: 0},
		{name: "a peak stays for the 24 hours after its own", recs: []rec{{hour(0), 5}, {hour(24), 1}}, now: hour(24).Add(59 * time.Minute), want: 5},
		{name: "and goes in the 25th", recs: []rec{{hour(0), 5}, {hour(25), 1}}, now: hour(25), want: 1},
		{name: "weekly look-ahead: two hours before the hour a week on", recs: []rec{{hour(0), 5}, {hour(30), 1}}, now: hour(weekHours - 2), want: 5},
		{name: "weekly look-ahead: the hour a week on", recs: []rec{{hour(0), 5}, {hour(weekHours), 1}}, now: hour(weekHours), want: 5},
		{name: "weekly look-ahead: not three hours before", recs: []rec{{hour(0), 5}, {hour(30), 1}}, now: hour(weekHours - 3), want: 0},
		{name: "weekly look-ahead: not the hour after", recs: []rec{{hour(0), 5}, {hour(weekHours + 1), 1}}, now: hour(weekHours + 1), want: 1},
		{name: "a gap longer than the ring clears it", recs: []rec{{hour(0), 5}, {hour(3 * weekHours), 1}}, now: hour(3 * weekHours), want: 1},
		{name: "a sample older than the ring is dropped", recs: []rec{{hour(peakHours + 10), 1}, {hour(9), 7}}, now: hour(peakHours + 10), want: 1},
		{name: "a late sample within the ring counts in its hour", recs: []rec{{hour(10), 1}, {hour(5), 7}}, now: hour(10), want: 7},
		{name: "before 1970: hours round down", recs: []rec{{time.Unix(-1, 0), 4}}, now: time.Unix(-3600, 0), want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p hourlyPeaks
			for _, r := range tt.recs {
				p.record(r.at, r.v)
			}
			if got := p.forecast(tt.now); got != tt.want {
				t.Errorf("forecast at %v = %v, want %v", tt.now, got, tt.want)
			}
			// A round trip through the checkpoint encoding predicts the same.
			b := p.appendBinary(nil)
			if len(b) != p.binarySize() {
				t.Errorf("binarySize %d, appendBinary wrote %d bytes", p.binarySize(), len(b))
			}
			var q hourlyPeaks
			rest, err := q.readBinary(b)
			if err != nil || len(rest) != 0 {
				t.Fatalf("round trip: %v, %d bytes left", err, len(rest))
			}
			if got := q.forecast(tt.now); got != tt.want {
				t.Errorf("after a round trip, forecast at %v = %v, want %v", tt.now, got, tt.want)
			}
		})
	}
}

func TestHourlyPeaksCoversDay(t *testing.T) {
	var p hourlyPeaks
	if p.coversDay(hour(100)) {
		t.Error("an empty ring covers a day")
	}
	p.record(hour(0), 1)
	if p.coversDay(hour(23).Add(59 * time.Minute)) {
		t.Error("23 hours cover a day")
	}
	if !p.coversDay(hour(24)) {
		t.Error("24 hours do not cover a day")
	}
}

func TestHourlyPeaksReadBinaryRefusesBadInput(t *testing.T) {
	var p hourlyPeaks
	p.record(hour(0), 1)
	p.record(hour(3), 2)
	good := p.appendBinary(nil)
	withCount := func(n uint64) []byte {
		b := append([]byte{1}, good[1:17]...)
		return binary.AppendUvarint(b, n)
	}
	tests := map[string][]byte{
		"nothing":               nil,
		"unknown flag":          {2},
		"truncated header":      good[:10],
		"truncated peaks":       good[:len(good)-1],
		"no hours":              withCount(0),
		"more than the ring":    withCount(peakHours + 1),
		"more than first..last": withCount(5),
		"negative peak": func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint64(b[len(b)-8:], math.Float64bits(-1))
			return b
		}(),
		"NaN peak": func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint64(b[len(b)-8:], math.Float64bits(math.NaN()))
			return b
		}(),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			var q hourlyPeaks
			if _, err := q.readBinary(b); !errors.Is(err, errModelFormat) {
				t.Errorf("readBinary = %v, want %v", err, errModelFormat)
			}
		})
	}
}

// marshalV1 is a model's checkpoint payload as the format before the hourly peaks (version 1) wrote it.
func marshalV1(m *model) []byte {
	cpu, _ := m.cpu.MarshalBinary()
	mem, _ := m.mem.MarshalBinary()
	b := append([]byte(modelMagic), modelVersionV1)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.created.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.lastSeen.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(cpu)))
	b = append(b, cpu...)
	b = binary.AppendUvarint(b, uint64(len(mem)))
	return append(b, mem...)
}

// TestVersion1CheckpointMigrates loads checkpoints of the format before the hourly peaks: the node stays warm and
// predicts what version 1 predicted (the histograms' p95 CPU and p98 memory) until the hourly peaks span a day,
// then what they say.
func TestVersion1CheckpointMigrates(t *testing.T) {
	dir := t.TempDir()
	e := trainedDay(t, dir)
	now := e.clk.Now()
	// The version 1 files, written by the store as an agent of that version did.
	for name, m := range e.srv.models {
		if err := e.srv.store.Save(name, marshalV1(m)); err != nil {
			t.Fatal(err)
		}
	}
	restarted := e.newServer(t, e.srv.opts)
	restarted.load()
	if got, want := len(restarted.modelNames()), len(e.srv.modelNames()); got != want {
		t.Fatalf("%d models loaded from version 1 checkpoints, want %d", got, want)
	}
	p := restarted.Prediction(now)
	prod := restarted.models[prodModel]
	wantPeak := Resources{
		MilliCPU:    int64(math.Ceil(prod.cpu.Percentile(0.95) * 1000)),
		MemoryBytes: int64(math.Ceil(prod.mem.Percentile(0.98))),
	}
	if !p.Warm || p.ColdPods != 0 || p.ProdPeak != wantPeak {
		t.Fatalf("after loading version 1: warm %v, %d cold pods, prod peak %+v; want warm, none cold, the histograms' %+v", p.Warm, p.ColdPods, p.ProdPeak, wantPeak)
	}

	// A day at a steady lower load: the hourly peaks take over, the histograms' older, higher samples no longer count.
	e.srv = restarted
	e.run(25*time.Hour, func(time.Time) []metriccache.Sample {
		// Values a float32 (the metric cache's) holds exactly.
		s := podSamples("uid-web", 0.125, 1*gib)
		s = append(s, podSamples("uid-api", 0.125, 1*gib)...)
		return append(s, systemSamples(0.5, 1*gib)...)
	})
	p = restarted.Prediction(e.clk.Now())
	if want := (Resources{MilliCPU: 250, MemoryBytes: 2 * gib}); p.ProdPeak != want {
		t.Errorf("a day after the migration the prod peak is %+v, want the hourly peaks' %+v", p.ProdPeak, want)
	}
}

// TestFastPathUp: a pod whose usage jumps far past everything it did before is predicted at its new usage from the
// next training round on, so the node reclaims nothing of it while it is above the old prediction.
func TestFastPathUp(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	addSteadyPods(e)
	e.run(2*time.Hour, steady(rand.New(rand.NewPCG(1, 2))))
	before := e.srv.Prediction(e.clk.Now())
	if !before.Warm || before.Reclaimable.MilliCPU == 0 {
		t.Fatalf("before the step: %+v, want warm with CPU reclaimable", before)
	}
	jump := func(time.Time) []metriccache.Sample {
		s := podSamples("uid-web", 3.875, 2*gib)
		s = append(s, podSamples("uid-batch", 3, 4*gib)...)
		return append(s, systemSamples(0.5, 1*gib)...)
	}
	e.run(time.Minute, jump)
	after := e.srv.Prediction(e.clk.Now())
	if after.ProdPeak.MilliCPU != 3875 || after.Reclaimable.MilliCPU != 0 {
		t.Errorf("a minute after the jump to 3.875 cores: prod peak %dm, %dm reclaimable; want 3875m and none", after.ProdPeak.MilliCPU, after.Reclaimable.MilliCPU)
	}
}

// FuzzUnmarshalModel: any payload either decodes into a model that encodes back to the same bytes (version 2) or
// is refused with an error; none panics.
func FuzzUnmarshalModel(f *testing.F) {
	m := newModel(t0)
	m.learnCPU([]float64{0.5, 1.5}, t0.Add(time.Minute))
	m.learnMem([]float64{gib}, t0.Add(time.Minute))
	m.learnCPU([]float64{2}, t0.Add(5*time.Hour))
	f.Add(m.marshal())
	f.Add(marshalV1(m))
	f.Add(newModel(t0).marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := unmarshalModel(b)
		if err != nil {
			return
		}
		if b[len(modelMagic)] == modelVersion {
			if again := got.marshal(); string(again) != string(b) {
				t.Errorf("decoded and encoded again: %x, want %x", again, b)
			}
		}
	})
}
