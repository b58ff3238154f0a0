package prediction

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

const benchPods = 200

// benchEnv is a node with 200 prod pods sampled every second (the default collector step), trained for a day so
// that the histograms hold a realistic spread of buckets. It returns the env and the samples of one second.
func benchEnv(b *testing.B, dir string) (*env, usage) {
	o := DefaultOptions()
	o.CheckpointDir = dir
	e := newEnv(b, o, time.Second)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range benchPods {
		e.states.SetPod(prodPod(fmt.Sprintf("p%03d", i), "1", "1Gi"))
	}
	u := func(t time.Time) []metriccache.Sample {
		s := make([]metriccache.Sample, 0, 2*benchPods+2)
		for i := range benchPods {
			s = append(s, podSamples(fmt.Sprintf("uid-p%03d", i), 0.2+0.6*rng.Float64(), float64(256<<20+rng.IntN(512<<20)))...)
		}
		return append(s, systemSamples(1+rng.Float64(), 2*gib)...)
	}
	return e, u
}

// BenchmarkTrain is one training round (a minute of 1 s samples) of 200 prod pods: the agent's CPU per minute.
func BenchmarkTrain(b *testing.B) {
	e, u := benchEnv(b, "")
	e.run(time.Hour, u) // models exist and hold an hour of samples
	now := e.clk.Now()
	b.ReportAllocs()
	for b.Loop() {
		// The same minute of samples each time: trainedUntil is reset so that the window is read again.
		e.srv.trainedUntil = time.Time{}
		e.srv.Train(now)
	}
}

// BenchmarkCheckpoint saves 201 models (200 pods and the two bands, after a day of training) to a temporary
// directory, fsync included, and reports the bytes on disk.
func BenchmarkCheckpoint(b *testing.B) {
	dir := b.TempDir()
	e, u := benchEnv(b, dir)
	e.run(24*time.Hour, u)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.srv.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(e.srv.store.Size()), "bytes-on-disk")
	b.ReportMetric(float64(e.srv.store.Size())/float64(len(e.srv.modelNames())), "bytes/model")
}
