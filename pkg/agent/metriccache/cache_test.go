package metriccache

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Unix(1_700_000_000, 0)

func newCache(t testing.TB, cfg Config) *MemoryCache {
	t.Helper()
	c, err := New(cfg, clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func small() Config {
	return Config{Step: time.Second, NodeSlots: 10, PodSlots: 5, CoarseStep: 5 * time.Second, CoarseSlots: 4}
}

var node = NodeKey(NodeCPUUsage)

// appendSeq appends values at t0+1s, t0+2s, ...
func appendSeq(c Cache, k Key, vals ...float64) {
	for i, v := range vals {
		c.Append(t0.Add(time.Duration(i+1)*time.Second), Sample{Key: k, Value: v})
	}
}

func TestQueryAggregations(t *testing.T) {
	c := newCache(t, small())
	// 10 samples 1..10 at t0+1s..t0+10s, shuffled in value order to show percentiles sort.
	appendSeq(c, node, 7, 3, 10, 1, 5, 9, 2, 8, 4, 6)
	r, ok := c.Query(node, t0, t0.Add(10*time.Second))
	if !ok {
		t.Fatal("no result")
	}
	got := map[Aggregation]float64{}
	for _, a := range []Aggregation{Avg, P50, P90, P95, P99, Last, Count} {
		got[a] = r.Value(a)
	}
	want := map[Aggregation]float64{Avg: 5.5, P50: 5, P90: 9, P95: 10, P99: 10, Last: 6, Count: 10}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("aggregations (-want +got):\n%s", d)
	}
	if r.Coverage != 1 || r.Resolution != time.Second || !r.First.Equal(t0.Add(time.Second)) || !r.Last.Equal(t0.Add(10*time.Second)) {
		t.Errorf("coverage %v, resolution %v, first %v, last %v", r.Coverage, r.Resolution, r.First, r.Last)
	}
	if v := r.Value("p42"); !math.IsNaN(v) {
		t.Errorf("unknown aggregation = %v, want NaN", v)
	}
}

func TestResultValues(t *testing.T) {
	c := newCache(t, small())
	appendSeq(c, node, 7, 3, 10)
	c.Append(t0.Add(5*time.Second), Sample{Key: node, Value: 1}) // t0+4s left empty
	r, ok := c.Query(node, t0, t0.Add(5*time.Second))
	if !ok {
		t.Fatal("no result")
	}
	dst := []float64{-1}
	if d := cmp.Diff([]float64{-1, 7, 3, 10, 1}, r.Values(dst)); d != "" {
		t.Errorf("Values appended to dst, oldest first (-want +got):\n%s", d)
	}
	r.Value(P50)
	if d := cmp.Diff([]float64{1, 3, 7, 10}, r.Values(nil)); d != "" {
		t.Errorf("Values after a percentile (-want +got):\n%s", d)
	}
}

func TestQueryWindows(t *testing.T) {
	tests := []struct {
		name         string
		key          Key
		times        []int // seconds after t0 of samples with value = the second
		start, end   int
		wantOK       bool
		wantValues   []float64
		wantCoverage float64
		wantRes      time.Duration
	}{
		{
			name: "window is (start, end]", key: node, times: []int{1, 2, 3, 4}, start: 1, end: 3,
			wantOK: true, wantValues: []float64{2, 3}, wantCoverage: 1, wantRes: time.Second,
		},
		{
			name: "cold start: samples cover the last half", key: node, times: []int{6, 7, 8, 9, 10}, start: 0, end: 10,
			wantOK: true, wantValues: []float64{6, 7, 8, 9, 10}, wantCoverage: 0.5, wantRes: time.Second,
		},
		{
			name: "gaps count in Count, not in Coverage", key: node, times: []int{1, 10}, start: 0, end: 10,
			wantOK: true, wantValues: []float64{1, 10}, wantCoverage: 1, wantRes: time.Second,
		},
		{
			name: "ring wrapped: only the newest span remains", key: node, times: seq(1, 25), start: 15, end: 25,
			wantOK: true, wantValues: []float64{16, 17, 18, 19, 20, 21, 22, 23, 24, 25}, wantCoverage: 1, wantRes: time.Second,
		},
		{
			name: "a gap longer than the ring clears it", key: node, times: []int{1, 2, 3, 40}, start: 30, end: 40,
			wantOK: true, wantValues: []float64{40}, wantCoverage: 0.1, wantRes: time.Second,
		},
		{
			name: "a gap shorter than the ring leaves no stale values", key: node, times: []int{1, 2, 3, 14}, start: 4, end: 14,
			// buckets 5..14; 11..13 held 1..3 one lap earlier and must read empty.
			wantOK: true, wantValues: []float64{14}, wantCoverage: 0.1, wantRes: time.Second,
		},
		{
			name: "pod series have the shorter pod ring", key: PodKey(PodCPUUsage, "uid"), times: seq(1, 10), start: 5, end: 10,
			wantOK: true, wantValues: []float64{6, 7, 8, 9, 10}, wantCoverage: 1, wantRes: time.Second,
		},
		{
			// Coarse buckets of 5 s: [0,5) holds 1..4 -> 2.5, [5,10) holds 5..9 -> 7, [10,15) holds 10..14 -> 12,
			// [15,20) holds 15 -> 15. The window (0, 20] spans coarse buckets 1..4.
			name: "long windows read the coarse averages", key: node, times: seq(1, 15), start: 0, end: 20,
			wantOK: true, wantValues: []float64{7, 12, 15}, wantCoverage: 1, wantRes: 5 * time.Second,
		},
		{name: "nothing in the window", key: node, times: []int{1}, start: 5, end: 9},
		{name: "empty window", key: node, times: []int{1}, start: 1, end: 1},
		{name: "no such series", key: NodeKey(NodePageCache), times: []int{1}, start: 0, end: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, small())
			for _, s := range tt.times {
				c.Append(t0.Add(time.Duration(s)*time.Second), Sample{Key: node, Value: float64(s)}, Sample{Key: PodKey(PodCPUUsage, "uid"), Value: float64(s)})
			}
			r, ok := c.Query(tt.key, t0.Add(time.Duration(tt.start)*time.Second), t0.Add(time.Duration(tt.end)*time.Second))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if d := cmp.Diff(tt.wantValues, r.values); d != "" {
				t.Errorf("values (-want +got):\n%s", d)
			}
			if r.Coverage != tt.wantCoverage || r.Resolution != tt.wantRes {
				t.Errorf("coverage %v resolution %v, want %v %v", r.Coverage, r.Resolution, tt.wantCoverage, tt.wantRes)
			}
		})
	}
}

func TestAppendEdgeCases(t *testing.T) {
	c := newCache(t, small())
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c.Append(at(10), Sample{Key: node, Value: 10})
	c.Append(at(10).Add(500*time.Millisecond), Sample{Key: node, Value: 11}) // same bucket: the later wins
	c.Append(at(8), Sample{Key: node, Value: 8})                             // late, but within the span: kept
	c.Append(at(-5), Sample{Key: node, Value: -5})                           // older than the span: dropped
	c.Append(at(9), Sample{Key: node, Value: math.NaN()}, Sample{Key: node, Value: math.Inf(1)})
	r, _ := c.Query(node, at(0), at(10))
	if d := cmp.Diff([]float64{8, 11}, r.values); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if _, ok := c.Query(NodeKey(NodeMemoryUsage), at(0), at(10)); ok {
		t.Error("a series of only NaN samples exists")
	}
}

func TestKeysDeleteStats(t *testing.T) {
	cfg := small()
	c := newCache(t, cfg)
	c.Append(t0,
		Sample{Key: node, Value: 1},
		Sample{Key: PodKey(PodCPUUsage, "a"), Value: 1},
		Sample{Key: ContainerKey(ContainerCPUUsage, "a", "c"), Value: 1},
		Sample{Key: PodKey(PodCPUUsage, "b"), Value: 1},
	)
	want := Stats{Series: 4, Bytes: cfg.SeriesBytes(false) + 3*cfg.SeriesBytes(true)}
	if got := c.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if got := len(c.Keys(func(k Key) bool { return k.Pod == "a" })); got != 2 {
		t.Errorf("Keys(pod a) = %d keys, want 2", got)
	}
	if n := c.Delete(func(k Key) bool { return k.Pod == "a" }); n != 2 {
		t.Errorf("Delete(pod a) = %d, want 2", n)
	}
	want = Stats{Series: 2, Bytes: cfg.SeriesBytes(false) + cfg.SeriesBytes(true)}
	if got := c.Stats(); got != want {
		t.Errorf("Stats after delete = %+v, want %+v", got, want)
	}
	if got := len(c.Keys(nil)); got != 2 {
		t.Errorf("Keys(nil) = %d, want 2", got)
	}
}

func TestInfo(t *testing.T) {
	c := newCache(t, small())
	if _, ok := c.Info(InfoNodeTopology); ok {
		t.Fatal("info before SetInfo")
	}
	c.SetInfo(InfoNodeTopology, "x")
	if v, ok := c.Info(InfoNodeTopology); !ok || v != "x" {
		t.Fatalf("Info = %v, %v", v, ok)
	}
}

func TestGC(t *testing.T) {
	cfg := small() // retention 20 s
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	c.Append(t0, Sample{Key: PodKey(PodCPUUsage, "gone"), Value: 1})
	c.Append(t0.Add(30*time.Second), Sample{Key: node, Value: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(30 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Series != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if keys := c.Keys(nil); len(keys) != 1 || keys[0] != node {
		t.Fatalf("after GC keys = %v, want only the fresh node series", keys)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := Config{Step: 0, NodeSlots: 0, PodSlots: -1, CoarseStep: 1500 * time.Millisecond, CoarseSlots: 0}
	err := bad.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, w := range []string{"step must be positive", "node slots", "pod slots", "coarse slots"} {
		if !contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if err := (Config{Step: time.Second, NodeSlots: 1, PodSlots: 1, CoarseStep: 1500 * time.Millisecond, CoarseSlots: 1}).Validate(); err == nil || !contains(err.Error(), "multiple of the step") {
		t.Errorf("coarse step not a multiple: %v", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if _, err := New(bad, clocktesting.NewFakeClock(t0)); err == nil {
		t.Error("New accepted an invalid config")
	}
}

// TestConcurrentUse runs appends, queries and deletes at once; run with -race it checks the locking.
func TestConcurrentUse(t *testing.T) {
	c := newCache(t, DefaultConfig())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := PodKey(PodCPUUsage, string(rune('a'+g)))
				c.Append(t0.Add(time.Duration(i)*time.Second), Sample{Key: k, Value: float64(i)})
				if r, ok := c.Query(k, t0, t0.Add(time.Duration(i)*time.Second)); ok {
					_ = r.Value(P99)
				}
				if i%100 == 0 {
					c.Delete(func(Key) bool { return false })
					_ = c.Stats()
				}
			}
		})
	}
	wg.Wait()
	if c.Stats().Series != 4 {
		t.Fatalf("series = %d, want 4", c.Stats().Series)
	}
}

// TestSeriesBytesMatchesHeap checks that SeriesBytes, the constant the docs state, is what a series really costs:
// the heap growth of 2,000 pod series is within 25% of 2,000 x SeriesBytes(true).
func TestSeriesBytesMatchesHeap(t *testing.T) {
	cfg := DefaultConfig()
	c := newCache(t, cfg)
	keys := make([]Key, 2000)
	for i := range keys {
		keys[i] = PodKey(PodCPUUsage, podUID(i))
	}
	before := heap()
	for _, k := range keys {
		c.Append(t0, Sample{Key: k, Value: 1})
	}
	grown := float64(heap() - before)
	want := float64(2000 * cfg.SeriesBytes(true))
	if grown < 0.75*want || grown > 1.25*want {
		t.Errorf("2000 pod series grew the heap by %.0f bytes, want %.0f +-25%% (SeriesBytes is off)", grown, want)
	}
	t.Logf("2000 pod series: heap +%.0f bytes, SeriesBytes x 2000 = %.0f", grown, want)
	runtime.KeepAlive(c)
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func podUID(i int) string {
	const hex = "0123456789abcdef"
	b := []byte("00000000-0000-0000-0000-000000000000")
	for p := len(b) - 1; i > 0 && p >= 0; p-- {
		if b[p] == '-' {
			continue
		}
		b[p] = hex[i%16]
		i /= 16
	}
	return string(b)
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
