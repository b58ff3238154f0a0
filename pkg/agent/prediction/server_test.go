package prediction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/prediction/checkpoint"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const gib = 1 << 30

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// env is a server trained from a real metric cache and states store, driven by a fake clock.
type env struct {
	clk    *clocktesting.FakeClock
	states *statesinformer.Store
	cache  *metriccache.MemoryCache
	srv    *Server
	step   time.Duration
}

func newEnv(t testing.TB, opts Options, step time.Duration) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	// The fine ring spans two training intervals, so each round reads raw samples at the collectors' step.
	slots := int(2 * opts.TrainingInterval / step)
	cache, err := metriccache.New(metriccache.Config{Step: step, NodeSlots: slots, PodSlots: slots, CoarseStep: step * time.Duration(slots), CoarseSlots: 2}, clk)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clk: clk, states: statesinformer.NewStore(), cache: cache, step: step}
	e.srv = e.newServer(t, opts)
	return e
}

func (e *env) newServer(t testing.TB, opts Options) *Server {
	t.Helper()
	srv, err := NewServer(e.states, e.cache, e.clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// usage is what the collectors sample at t.
type usage func(t time.Time) []metriccache.Sample

// run appends one round of samples every step from the clock's time for d, training every TrainingInterval, and
// leaves the clock at the end.
func (e *env) run(d time.Duration, u usage) {
	interval := e.srv.opts.TrainingInterval
	end := e.clk.Now().Add(d)
	for t := e.clk.Now().Add(e.step); !t.After(end); t = t.Add(e.step) {
		e.cache.Append(t, u(t)...)
		if t.Sub(t0)%interval == 0 {
			e.clk.SetTime(t)
			e.srv.Train(t)
		}
	}
	e.clk.SetTime(end)
}

func podSamples(uid string, cpu, mem float64) []metriccache.Sample {
	return []metriccache.Sample{
		{Key: metriccache.PodKey(metriccache.PodCPUUsage, uid), Value: cpu},
		{Key: metriccache.PodKey(metriccache.PodMemoryUsage, uid), Value: mem},
	}
}

func systemSamples(cpu, mem float64) []metriccache.Sample {
	return []metriccache.Sample{
		{Key: metriccache.NodeKey(metriccache.SystemCPUUsage), Value: cpu},
		{Key: metriccache.NodeKey(metriccache.SystemMemoryUsage), Value: mem},
	}
}

func prodPod(name, cpu, mem string) *corev1.Pod {
	return testutil.Pod(name).Container("app").Requests("cpu", cpu, "memory", mem).Obj()
}

// steady: a prod pod "web" using 0.9-1.0 core and 2 GiB, a batch pod using 3 cores, the system 0.5 core and 1 GiB.
func steady(rng *rand.Rand) usage {
	return func(time.Time) []metriccache.Sample {
		s := podSamples("uid-web", 0.9+0.1*rng.Float64(), 2*gib)
		s = append(s, podSamples("uid-batch", 3, 4*gib)...)
		return append(s, systemSamples(0.5, 1*gib)...)
	}
}

func testOptions() Options {
	o := DefaultOptions()
	o.ColdStart = time.Hour
	return o
}

func addSteadyPods(e *env) {
	e.states.SetPod(prodPod("web", "4", "8Gi"))
	e.states.SetPod(testutil.Pod("batch").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "2").Obj())
}

func TestColdStartThenReclaimable(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	addSteadyPods(e)
	rng := rand.New(rand.NewPCG(1, 2))

	e.run(59*time.Minute, steady(rng))
	cold := e.srv.Prediction(e.clk.Now())
	if cold.Warm || cold.ColdPods != 1 || cold.Reclaimable != (Resources{}) || cold.PodReclaimable != (Resources{}) {
		t.Fatalf("before the cold start ended: %+v, want cold with nothing reclaimable", cold)
	}
	if cold.Since != t0.Add(time.Minute) {
		t.Errorf("Since = %v, want the first training round %v", cold.Since, t0.Add(time.Minute))
	}
	if want := (Resources{MilliCPU: 4000, MemoryBytes: 8 * gib}); cold.ProdRequest != want {
		t.Errorf("ProdRequest = %+v, want only the prod pod's %+v", cold.ProdRequest, want)
	}

	e.run(2*time.Hour, steady(rng))
	p := e.srv.Prediction(e.clk.Now())
	t.Logf("warm prediction: %+v", p)
	checkSteadyWarm(t, p)
	if names := e.srv.modelNames(); len(names) != 3 || !names["uid-web"] || !names[prodModel] || !names[systemModel] {
		t.Errorf("models = %v, want uid-web, prod and system (no batch pod)", names)
	}
}

// checkSteadyWarm checks the prediction of the steady workload after the cold start.
func checkSteadyWarm(t *testing.T, p Prediction) {
	t.Helper()
	if !p.Warm || p.ColdPods != 0 {
		t.Fatalf("after the cold start: Warm=%v ColdPods=%d, want warm", p.Warm, p.ColdPods)
	}
	// The pod's p95 is 1.0 core, read as a bucket's upper bound (at most 5 % above): 4 - 1.1 x [1.0, 1.05].
	if c := p.PodReclaimable.MilliCPU; c < 2845 || c > 2900 {
		t.Errorf("pod-reclaimable CPU = %dm, want 4000m - 1.1 x ~1000m", c)
	}
	// The prod band is the one prod pod; the batch pod's 3 cores are not in it.
	if c := p.ProdPeak.MilliCPU; c < 1000 || c > 1050 {
		t.Errorf("prod peak = %dm, want ~1000m", c)
	}
	if c := p.SystemPeak.MilliCPU; c < 500 || c > 525 {
		t.Errorf("system peak = %dm, want ~500m", c)
	}
	if m := p.ProdPeak.MemoryBytes; m < 2*gib || m > 2*gib*105/100 {
		t.Errorf("prod peak memory = %d, want ~2 GiB", m)
	}
	want := PriorityReclaimable(p.ProdRequest, p.SystemPeak, p.ProdPeak, true, 10)
	if p.PriorityReclaimable != want || p.Reclaimable != Reclaimable(p.PodReclaimable, want) {
		t.Errorf("priority-reclaimable %+v / reclaimable %+v do not follow from the peaks", p.PriorityReclaimable, p.Reclaimable)
	}
	// 4 - 1.1 x (1.0 + 0.5) cores: the system part makes the priority prediction the smaller one.
	if c := p.Reclaimable.MilliCPU; c < 2270 || c > 2350 {
		t.Errorf("reclaimable CPU = %dm, want ~2350m", c)
	}
}

// TestSpikeCountsForProdNotForTheSystemPart: a two-minute spike to 3 cores counts in the prod peak for the next day
// (a service that peaked once will again), but not in the system part's, which is its typical level (an image
// pull's spike would otherwise withhold the mid tier for a day; docs/prediction.md).
func TestSpikeCountsForProdNotForTheSystemPart(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	e.states.SetPod(prodPod("web", "4", "8Gi"))
	spikeFrom, spikeTo := t0.Add(90*time.Minute), t0.Add(92*time.Minute)
	e.run(3*time.Hour, func(at time.Time) []metriccache.Sample {
		cpu := 0.5
		if !at.Before(spikeFrom) && at.Before(spikeTo) {
			cpu = 3
		}
		return append(podSamples("uid-web", cpu, 2*gib), systemSamples(cpu, 1*gib)...)
	})
	p := e.srv.Prediction(e.clk.Now())
	if !p.Warm {
		t.Fatalf("not warm after 3 hours: %+v", p)
	}
	if c := p.ProdPeak.MilliCPU; c != 3000 {
		t.Errorf("prod peak = %dm, want the spike's 3000m", c)
	}
	if c := p.SystemPeak.MilliCPU; c < 500 || c > 525 {
		t.Errorf("system peak = %dm, want its typical ~500m, not the spike's 3000m", c)
	}
}

// TestRiseBetweenRoundsIsCoveredAtOnce: usage that rises above the predicted peak after the last training round is
// in the next prediction already (no reclaimable amount while usage is above the prediction), for the pod and the
// prod band, before any round has trained on it.
func TestRiseBetweenRoundsIsCoveredAtOnce(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	e.states.SetPod(prodPod("web", "4", "8Gi"))
	e.run(2*time.Hour, func(time.Time) []metriccache.Sample {
		return append(podSamples("uid-web", 0.5, 2*gib), systemSamples(0.2, 1*gib)...)
	})
	before := e.srv.Prediction(e.clk.Now())
	// ~500m: a model younger than a day is at least its histogram's p95, a bucket's bound up to 5 % above.
	if !before.Warm || before.ProdPeak.MilliCPU < 500 || before.ProdPeak.MilliCPU > 525 {
		t.Fatalf("before the rise: %+v, want warm with a prod peak of ~500m", before)
	}
	// 30 s of 3 cores and 5 GiB: no training round in between (they run on the minute).
	e.run(30*time.Second, func(time.Time) []metriccache.Sample {
		return append(podSamples("uid-web", 3, 5*gib), systemSamples(0.2, 1*gib)...)
	})
	p := e.srv.Prediction(e.clk.Now())
	if want := (Resources{MilliCPU: 3000, MemoryBytes: 5 * gib}); p.ProdPeak != want {
		t.Errorf("prod peak = %+v, want the untrained rise %+v", p.ProdPeak, want)
	}
	// 4 cores requested, 3 used: 4000 - 1.1 x 3000 = 700m at most, against 4000 - 1.1 x 500 before.
	if c := p.Reclaimable.MilliCPU; c > 700 {
		t.Errorf("reclaimable CPU = %dm after the rise, want at most 700m (before it: %dm)", c, before.Reclaimable.MilliCPU)
	}
}

func TestBandIsSumOfProdPods(t *testing.T) {
	o := testOptions()
	o.ColdStart = 0
	e := newEnv(t, o, 10*time.Second)
	e.states.SetPod(prodPod("a", "2", "1Gi"))
	e.states.SetPod(prodPod("b", "2", "1Gi"))
	// a peaks when b idles: the band's peak is the peak of the sum, not the sum of the peaks.
	e.run(3*time.Hour, func(t time.Time) []metriccache.Sample {
		a, b := 1.0, 0.2
		if t.Unix()/60%2 == 0 {
			a, b = b, a
		}
		s := podSamples("uid-a", a, gib/2)
		return append(s, podSamples("uid-b", b, gib/2)...)
	})
	p := e.srv.Prediction(e.clk.Now())
	if c := p.ProdPeak.MilliCPU; c < 1200 || c > 1260 {
		t.Errorf("band peak = %dm, want the sum 1200m (each pod peaks at 1000m, not together)", c)
	}
	if p.Warm {
		t.Errorf("warm without a system model")
	}
}

func TestModelWithoutCPUSamplesStaysCold(t *testing.T) {
	o := testOptions()
	o.ColdStart = 0
	e := newEnv(t, o, 10*time.Second)
	e.states.SetPod(prodPod("web", "4", "8Gi"))
	e.run(time.Hour, func(time.Time) []metriccache.Sample {
		return append(systemSamples(0.5, gib), metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, "uid-web"), Value: gib})
	})
	p := e.srv.Prediction(e.clk.Now())
	if p.Warm || p.ColdPods != 1 || p.Reclaimable != (Resources{}) {
		t.Errorf("prediction with memory samples only = %+v, want cold, nothing reclaimable", p)
	}
}

func TestGonePodModelExpires(t *testing.T) {
	dir := t.TempDir()
	o := testOptions()
	o.CheckpointDir = dir
	e := newEnv(t, o, 10*time.Second)
	e.states.SetPod(prodPod("web", "1", "1Gi"))
	e.states.SetPod(prodPod("api", "1", "1Gi"))
	u := func(time.Time) []metriccache.Sample {
		return append(podSamples("uid-web", 0.5, gib/2), podSamples("uid-api", 0.5, gib/2)...)
	}
	e.run(10*time.Minute, u)
	if err := e.srv.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	e.states.DeletePod("uid-api")

	e.run(o.ModelExpiry, u)
	if !e.srv.modelNames()["uid-api"] {
		t.Fatalf("model of a pod gone for exactly ModelExpiry dropped: %v", e.srv.modelNames())
	}
	e.run(o.TrainingInterval, u)
	names := e.srv.modelNames()
	if names["uid-api"] || !names["uid-web"] || !names[prodModel] {
		t.Fatalf("models after the expiry = %v, want uid-web and prod, not uid-api", names)
	}
	if err := e.srv.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uid-api.ckpt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint of the expired model not pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uid-web.ckpt")); err != nil {
		t.Errorf("checkpoint of a live model: %v", err)
	}
}

// trainedDay is a server with checkpoints in dir trained for a simulated day, warm.
func trainedDay(t *testing.T, dir string) *env {
	o := testOptions()
	o.ColdStart = 12 * time.Hour
	o.CheckpointDir = dir
	e := newEnv(t, o, 10*time.Second)
	addSteadyPods(e)
	e.states.SetPod(prodPod("api", "2", "4Gi"))
	steadyU := steady(rand.New(rand.NewPCG(3, 4)))
	e.run(24*time.Hour, func(t time.Time) []metriccache.Sample {
		return append(steadyU(t), podSamples("uid-api", 0.3+0.2*float64(t.Hour())/24, 3*gib)...)
	})
	return e
}

func TestRestartResumesFromCheckpoints(t *testing.T) {
	dir := t.TempDir()
	e := trainedDay(t, dir)
	before := e.srv.Prediction(e.clk.Now())
	if !before.Warm || before.ColdPods != 0 || before.Reclaimable.MilliCPU == 0 {
		t.Fatalf("after a day: %+v, want warm with something reclaimable", before)
	}
	if err := e.srv.Checkpoint(); err != nil {
		t.Fatal(err)
	}

	restarted := e.newServer(t, e.srv.opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- restarted.Start(ctx) }()
	// Start creates its tickers after loading the checkpoints.
	deadline := time.Now().Add(10 * time.Second)
	for !e.clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Start did not reach its loop")
		}
		time.Sleep(time.Millisecond)
	}
	after := restarted.Prediction(e.clk.Now())
	t.Logf("before: %+v\nafter:  %+v", before, after)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("prediction after the restart differs (-before +after):\n%s", diff)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}

func TestCorruptCheckpointStartsThatModelCold(t *testing.T) {
	dir := t.TempDir()
	e := trainedDay(t, dir)
	if err := e.srv.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// web's file truncated; api's a valid envelope whose payload is not a model; a future-format file for a pod.
	webFile := filepath.Join(dir, "uid-web.ckpt")
	data, err := os.ReadFile(webFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(webFile, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save("uid-api", []byte("gpm\x09 not a model")); err != nil {
		t.Fatal(err)
	}
	future := []byte("GLCK\x07\x00 from a newer agent")
	if err := os.WriteFile(filepath.Join(dir, "uid-other.ckpt"), future, 0o600); err != nil {
		t.Fatal(err)
	}

	restarted := e.newServer(t, e.srv.opts)
	restarted.load()
	names := restarted.modelNames()
	if names["uid-web"] || names["uid-api"] || names["uid-other"] || !names[prodModel] || !names[systemModel] {
		t.Fatalf("models loaded = %v, want prod and system only", names)
	}
	p := restarted.Prediction(e.clk.Now())
	if !p.Warm || p.ColdPods != 2 || p.PodReclaimable != (Resources{}) {
		t.Errorf("prediction = %+v, want the node warm, both pods cold and reclaiming nothing", p)
	}
	// Training goes on; the next checkpoint replaces the bad files of live pods.
	e.srv = restarted
	e.run(time.Minute, func(time.Time) []metriccache.Sample {
		return append(podSamples("uid-web", 1, gib), podSamples("uid-api", 1, gib)...)
	})
	if err := restarted.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// ... and prunes the future-format file: no model has its name.
	if payloads, errs := store.LoadAll(); len(errs) != 0 || len(payloads) != 4 {
		t.Errorf("after a new checkpoint: %d files loaded, errors %v; want the 4 models' files and no error", len(payloads), errs)
	}
}

func TestCheckpointStoreFull(t *testing.T) {
	o := testOptions()
	o.CheckpointDir = t.TempDir()
	o.CheckpointMaxBytes = 300
	e := newEnv(t, o, 10*time.Second)
	addSteadyPods(e)
	e.run(10*time.Minute, steady(rand.New(rand.NewPCG(5, 6))))
	err := e.srv.Checkpoint()
	if !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Fatalf("Checkpoint into a 300-byte store = %v, want ErrTooLarge", err)
	}
	t.Log(err)
	if got := e.srv.Prediction(e.clk.Now()).ProdPeak; got.MilliCPU == 0 {
		t.Errorf("models lost after a failed checkpoint")
	}
}

func TestModelCap(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	var samples []metriccache.Sample
	for i := range maxModels + 5 {
		name := fmt.Sprintf("p%04d", i)
		e.states.SetPod(prodPod(name, "100m", "10Mi"))
		samples = append(samples, podSamples("uid-"+name, 0.05, 5<<20)...)
	}
	samples = append(samples, systemSamples(0.1, gib)...)
	e.run(time.Minute, func(time.Time) []metriccache.Sample { return samples })
	names := e.srv.modelNames()
	if len(names) != maxModels+2 || !names[prodModel] || !names[systemModel] || names["uid-p1028"] {
		t.Errorf("%d models (prod %v, system %v, the last pod %v), want %d pod models and both band models",
			len(names), names[prodModel], names[systemModel], names["uid-p1028"], maxModels)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no training interval", func(o *Options) { o.TrainingInterval = 0 }, "training interval"},
		{"expiry below the interval", func(o *Options) { o.ModelExpiry = time.Second }, "model expiry"},
		{"negative cold start", func(o *Options) { o.ColdStart = -time.Second }, "cold start"},
		{"negative margin", func(o *Options) { o.SafetyMarginPercent = -1 }, "safety margin"},
		{"checkpoints without interval", func(o *Options) { o.CheckpointDir = "/x"; o.CheckpointInterval = 0 }, "checkpoint interval"},
		{"checkpoints without bound", func(o *Options) { o.CheckpointDir = "/x"; o.CheckpointMaxBytes = 0 }, "size bound"},
		{"no checkpoints, no bound needed", func(o *Options) { o.CheckpointMaxBytes = 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.mutate(&o)
			err := o.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, nerr := NewServer(statesinformer.NewStore(), nil, clocktesting.NewFakeClock(t0), o); (nerr == nil) != (err == nil) {
				t.Errorf("NewServer error %v disagrees with Validate %v", nerr, err)
			}
		})
	}
}

func TestNewServerUnusableCheckpointDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.CheckpointDir = filepath.Join(file, "sub")
	if _, err := NewServer(statesinformer.NewStore(), nil, clocktesting.NewFakeClock(t0), o); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("NewServer with a checkpoint dir under a file = %v, want an error about the checkpoints", err)
	}
}
