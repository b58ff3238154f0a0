package colocation

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gleaner-sh/gleaner/test/ci"
)

// Poisson arrivals: as many as the rate gives on average, gaps whose spread is that of an exponential distribution
// (standard deviation equal to the mean, where even spacing has none), the same for the same seed and not for another.
func TestPoissonArrivals(t *testing.T) {
	g := Generator{Rate: 1000, Poisson: true, Seed: 7}
	due := g.dueOffsets(20 * time.Second)
	if n := len(due); n < 19400 || n > 20600 { // 20,000 expected, sd 141
		t.Fatalf("%d arrivals in 20 s at 1,000/s, want 20,000 ± 3%%", n)
	}
	var sum, sumSq float64
	for i := 1; i < len(due); i++ {
		gap := float64(due[i]-due[i-1]) / float64(time.Millisecond)
		if gap < 0 {
			t.Fatalf("arrival %d before the one before it", i)
		}
		sum += gap
		sumSq += gap * gap
	}
	n := float64(len(due) - 1)
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	if math.Abs(mean-1) > 0.03 || math.Abs(sd-1) > 0.05 {
		t.Errorf("gaps: mean %.3f ms, standard deviation %.3f ms; want both 1 ms (exponential)", mean, sd)
	}
	again := g.dueOffsets(20 * time.Second)
	if len(again) != len(due) || again[100] != due[100] {
		t.Error("the same seed gave other arrivals")
	}
	g.Seed = 8
	if other := g.dueOffsets(20 * time.Second); other[100] == due[100] {
		t.Error("another seed gave the same arrivals")
	}
	even := Generator{Rate: 1000}.dueOffsets(time.Second)
	if len(even) != 1000 || even[1]-even[0] != time.Millisecond || even[999]-even[998] != time.Millisecond {
		t.Errorf("evenly spaced: %d arrivals, want 1,000 one millisecond apart", len(even))
	}
}

// A warmed pool opens its connections before the run and none during it, however the requests bunch up, and never
// more than its size: requests beyond it wait for a connection.
func TestPoolNeverDialsDuringARun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(5 * time.Millisecond)
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	p := NewPool(8, 2*time.Second)
	if err := p.Warm(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if got := p.Dials(); got != 8 {
		t.Fatalf("%d dials after warming a pool of 8, want 8", got)
	}
	// Poisson at 1,000/s against 5 ms a request: about 5 in flight on average, often more than 8.
	g := Generator{URL: srv.URL, Rate: 1000, Poisson: true, Seed: 1, Client: p.Client}
	samples, err := g.Run(context.Background(), 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l := Summarize(samples); l.Errors != 0 || l.Requests < 400 {
		t.Fatalf("%+v, want about 500 requests without errors", l)
	}
	if got := p.Dials(); got != 8 {
		t.Errorf("%d dials after the run, want the 8 of warming: the pool dialed during the run", got)
	}
}

// A pool that cannot open its connections says so.
func TestPoolWarmFails(t *testing.T) {
	p := NewPool(2, time.Second)
	if err := p.Warm(context.Background(), "http://127.0.0.1:1/"); err == nil {
		t.Error("warming a pool to a closed port succeeded")
	}
}

// A request past the client's timeout is an error, marked as a timeout, and counts in the percentiles at its latency:
// its user waited that long. Another error does not count in them.
func TestTimeoutsCountAtTheirLatency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			time.Sleep(300 * time.Millisecond)
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	g := Generator{URL: srv.URL + "/?slow=1", Rate: 50, Client: &http.Client{Timeout: 50 * time.Millisecond}}
	samples, err := g.Run(context.Background(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if !s.Timeout || s.Err == "" || s.Latency < 50*time.Millisecond {
			t.Fatalf("a request past the 50ms timeout: %+v, want a timeout error of at least 50ms", s)
		}
	}
	refused := Sample{Latency: time.Hour, Err: "connection refused"}
	l := Summarize(append(samples, refused))
	if l.Errors != 6 || l.Timeouts != 5 || l.P50 < 50 || l.Max > 1000 {
		t.Errorf("%+v, want 6 errors of which 5 timeouts, the percentiles at the timeouts' latency and not the refused request's", l)
	}
}

// The service's timestamps split each latency into four segments that add up to it, and its CPU time says how much
// of the handler's segment it ran.
func TestSegments(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		start := time.Now()
		time.Sleep(3 * time.Millisecond)
		w.Header().Set(HeaderHandlerStart, strconv.FormatInt(start.UnixNano(), 10))
		w.Header().Set(HeaderHandlerEnd, strconv.FormatInt(time.Now().UnixNano(), 10))
		w.Header().Set(HeaderHandlerCPU, "1250000") // 1.25 ms of the handler's 3 on a CPU
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	samples, err := Generator{URL: srv.URL, Rate: 100, Client: &http.Client{}}.Run(context.Background(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		seg := segmentsOf(s)
		sum := seg.DueToSent + seg.SentToHandler + seg.Handler + seg.HandlerToDone
		if math.Abs(sum-ms(s.Latency)) > 1e-6 || seg.Handler < 3 || seg.DueToSent < 0 || seg.SentToHandler < 0 || seg.HandlerToDone < 0 {
			t.Fatalf("segments %+v of a %s request: want four non-negative parts adding up to it, the handler at least 3ms", seg, s.Latency)
		}
		if seg.HandlerCPU != 1.25 {
			t.Fatalf("segments %+v: the handler's CPU %v ms, want the 1.25 its answer said", seg, seg.HandlerCPU)
		}
	}
	l := Summarize(samples)
	if l.Segments == nil || l.Segments.Median.Handler < 3 || l.Segments.Tail.Handler < 3 {
		t.Errorf("breakdown %+v, want the handler's 3 ms in the median and the tail", l.Segments)
	}
	if l.Segments != nil && (l.Segments.Median.HandlerCPU != 1.25 || l.Segments.Tail.HandlerCPU != 1.25) {
		t.Errorf("breakdown %+v, want the handler's 1.25 ms of CPU in the median and the tail", l.Segments)
	}
	// Without the service's headers there is nothing to split.
	for i := range samples {
		samples[i].HandlerStart = time.Time{}
	}
	if l := Summarize(samples); l.Segments != nil {
		t.Errorf("breakdown %+v from samples without the handler's start, want none", l.Segments)
	}
}

// The run-queue wait of a process's threads is the sum of their schedstats' second fields; a malformed one is an
// error that names the thread.
func TestRunDelay(t *testing.T) {
	dir := t.TempDir()
	write := func(tid, content string) {
		if err := os.MkdirAll(filepath.Join(dir, tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tid, "schedstat"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("100", "5000000 1500000 40\n")
	write("101", "7000 2500000 3\n")
	got, err := RunDelay(dir)
	if err != nil || got != 4*time.Millisecond {
		t.Errorf("RunDelay = %s, %v; want 4ms", got, err)
	}
	write("102", "garbage\n")
	if _, err := RunDelay(dir); err == nil {
		t.Error("a malformed schedstat was accepted")
	}
	if _, err := RunDelay(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing task directory was accepted")
	}
	if d, err := RunDelay("/proc/self/task"); err != nil || d < 0 {
		t.Errorf("RunDelay of this process = %s, %v", d, err)
	}
}

// Every thread of the process runs at SCHED_RR after RealtimeThreads, and at SCHED_OTHER after its restore.
func TestRealtimeThreads(t *testing.T) {
	if _, err := RealtimeThreads(0); err == nil {
		t.Error("priority 0 accepted")
	}
	if os.Geteuid() != 0 {
		ci.Skipf(t, "SCHED_RR needs CAP_SYS_NICE (uid %d)", os.Geteuid())
	}
	policies := func() map[uint32]int {
		tids, err := threads("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint32]int{}
		for _, tid := range tids {
			if attr, err := unix.SchedGetAttr(tid, 0); err == nil {
				out[attr.Policy]++
			}
		}
		return out
	}
	restore, err := RealtimeThreads(10)
	if err != nil {
		t.Fatal(err)
	}
	got := policies()
	if errRestore := restore(); errRestore != nil {
		t.Fatal(errRestore)
	}
	if got[unix.SCHED_RR] == 0 || len(got) != 1 {
		t.Errorf("threads by policy after RealtimeThreads: %v, want all at SCHED_RR (%d)", got, unix.SCHED_RR)
	}
	if after := policies(); after[unix.SCHED_NORMAL] == 0 || len(after) != 1 {
		t.Errorf("threads by policy after restore: %v, want all at SCHED_OTHER (%d)", after, unix.SCHED_NORMAL)
	}
}
