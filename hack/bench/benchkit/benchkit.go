// Package benchkit is what Gleaner's scale benchmarks (hack/bench/...) share: a real API server (envtest's
// kube-apiserver and etcd) with Gleaner's CRDs, fast loader clients, parallel creation, gleaner-manager run as a
// process with its CPU and memory read from /proc, and its Prometheus metrics scraped and summarised.
//
// Nothing here is part of `make test`: the benchmarks are Makefile targets whose results go to docs/benchmarks.md.
package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/config/crd"
)

// Logf prints a progress line with the time to stderr; results go to stdout.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Cluster is an API server the benchmark runs against.
type Cluster struct {
	// Kubeconfig is the path of an admin kubeconfig for it.
	Kubeconfig string
	// Config reaches it as an admin.
	Config *rest.Config

	stop func()
}

// StartCluster starts kube-apiserver and etcd from assets with Gleaner's CRDs and those in the files extraCRDs,
// or attaches to the cluster whose kubeconfig is attach (then Stop leaves it running, and extraCRDs are not
// installed).
func StartCluster(assets, attach string, extraCRDs ...string) (*Cluster, error) {
	if attach != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", attach)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", attach, err)
		}
		return &Cluster{Kubeconfig: attach, Config: cfg, stop: func() {}}, nil
	}
	if assets == "" {
		return nil, errors.New("--assets (or KUBEBUILDER_ASSETS) is required")
	}
	crds, err := crd.Objects()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, CRDInstallOptions: envtest.CRDInstallOptions{Paths: extraCRDs, ErrorIfPathMissing: true}}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	dir, err := os.MkdirTemp("", "gleaner-bench-")
	c := &Cluster{Config: cfg, stop: func() {
		_ = env.Stop()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}}
	if err == nil {
		c.Kubeconfig = filepath.Join(dir, "kubeconfig")
		err = writeKubeconfig(env, c.Kubeconfig)
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Stop stops what StartCluster started.
func (c *Cluster) Stop() { c.stop() }

func writeKubeconfig(env *envtest.Environment, path string) error {
	user, err := env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding an admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

// Clients returns the benchmark's own loader clients, at qps (burst twice that): a protobuf clientset for built-in
// kinds and a controller-runtime client (with watch) that knows Gleaner's kinds.
func (c *Cluster) Clients(qps float32) (kubernetes.Interface, client.WithWatch, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := slov1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	return cs, wc, err
}

// Parallel calls f(0..n-1) from workers goroutines and returns the errors; a worker stops at its first error.
func Parallel(workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// FreeAddr returns a loopback address with a port nothing listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// Process is a program the benchmark runs and measures, with its output in a log file.
type Process struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// Log is the file with its stdout and stderr.
	Log string
	// Started is when it was started.
	Started time.Time

	done chan error
}

// Start runs bin with args, with env ("NAME=value") added to the benchmark's own environment.
func Start(env []string, bin string, args ...string) (*Process, error) {
	logFile, err := os.CreateTemp("", "gleaner-bench-"+filepath.Base(bin)+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &Process{Cmd: cmd, Log: logFile.Name(), done: make(chan error, 1)}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { p.done <- cmd.Wait(); _ = logFile.Close() }()
	Logf("%s started (pid %d, log %s)", filepath.Base(bin), cmd.Process.Pid, p.Log)
	return p, nil
}

// Exited reports whether the process has ended, with its error.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits for the process to end.
func (p *Process) Stop() {
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.done; err != nil {
		Logf("%s stopped: %v", filepath.Base(p.Cmd.Path), err)
	}
}

// CPU is the user and system CPU time the process has used so far.
func (p *Process) CPU() time.Duration {
	proc, err := procfs.NewProc(p.Cmd.Process.Pid)
	if err != nil {
		return 0
	}
	st, err := proc.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// Memory reads a line of /proc/PID/status in bytes: VmRSS (now) or VmHWM (peak).
func (p *Process) Memory(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Metrics are one scrape of a /metrics endpoint.
type Metrics map[string]*dto.MetricFamily

// Scrape reads the Prometheus metrics served at addr.
func Scrape(ctx context.Context, addr string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// matches reports whether a series has every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}

// Sum adds up the counters, gauges or histogram sample counts of name whose labels include labels.
func (ms Metrics) Sum(name string, labels map[string]string) float64 {
	mf, ok := ms[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// HistogramQuantiles estimates p50 and p99 of what a histogram observed between two scrapes (linear inside a
// bucket, as Prometheus' histogram_quantile).
func HistogramQuantiles(before, after Metrics, name string, labels map[string]string) [2]time.Duration {
	find := func(ms Metrics) *dto.Histogram {
		mf, ok := ms[name]
		if !ok {
			return nil
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				return m.GetHistogram()
			}
		}
		return nil
	}
	a, b := find(after), find(before)
	if a == nil {
		return [2]time.Duration{}
	}
	counts := make([]float64, len(a.GetBucket()))
	for i, bk := range a.GetBucket() {
		counts[i] = float64(bk.GetCumulativeCount())
		if b != nil {
			counts[i] -= float64(b.GetBucket()[i].GetCumulativeCount())
		}
	}
	total := float64(a.GetSampleCount())
	if b != nil {
		total -= float64(b.GetSampleCount())
	}
	q := func(p float64) time.Duration {
		rank, lower, prev := p*total, 0.0, 0.0
		for i, bk := range a.GetBucket() {
			if counts[i] >= rank {
				upper := bk.GetUpperBound()
				frac := 1.0
				if counts[i] > prev {
					frac = (rank - prev) / (counts[i] - prev)
				}
				return time.Duration((lower + (upper-lower)*frac) * float64(time.Second))
			}
			lower, prev = bk.GetUpperBound(), counts[i]
		}
		return time.Duration(lower * float64(time.Second))
	}
	return [2]time.Duration{q(0.5), q(0.99)}
}

// Loadavg is the machine's 1-minute load average: the benchmarks share their cores with whatever else runs.
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// Median is the middle of ds.
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 0.5) }

// Percentile is the p-quantile of ds (nearest rank below).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// TimeCmd runs a command n times with its output discarded and returns the durations.
func TimeCmd(n int, name string, args ...string) ([]time.Duration, error) {
	var ds []time.Duration
	for range n {
		cmd := exec.Command(name, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
		}
		ds = append(ds, time.Since(start))
		Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), ds[len(ds)-1].Round(time.Millisecond))
	}
	return ds, nil
}

// Profile saves a profile from the Go pprof endpoint at addr (net/http/pprof's /debug/pprof/<kind>, with query
// such as "seconds=30" for a CPU profile over the next 30 s) to dir/name.pprof, and the top of it (`go tool pprof
// -top`, by flat and by cumulative) to dir/name.txt.
func Profile(ctx context.Context, addr, kind, query, dir, name string) error {
	url := "http://" + addr + "/debug/pprof/" + kind
	if query != "" {
		url += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reading the %s profile: %w", kind, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading the %s profile: %s", kind, resp.Status)
	}
	path := filepath.Join(dir, name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("saving the %s profile: %w", kind, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	var top []byte
	for _, order := range []string{"-flat", "-cum"} {
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", order, "-nodecount=40", path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof -top %s: %w\n%s", path, err, out)
		}
		top = append(top, out...)
		top = append(top, '\n')
	}
	Logf("profile %s written (top in %s.txt)", path, name)
	return os.WriteFile(filepath.Join(dir, name+".txt"), top, 0o644)
}

// WaitServing waits until addr accepts connections, for at most timeout.
func WaitServing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing serves %s after %s: %w", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ChildMemory reads VmRSS and VmHWM (peak), in bytes, of this process's child named comm (such as
// kube-apiserver or etcd, which envtest starts), or zeros when there is none.
func ChildMemory(comm string) (rss, peak int64) {
	c, err := Child(comm)
	if err != nil {
		return 0, 0
	}
	return c.Memory("VmRSS"), c.Memory("VmHWM")
}

// Child finds this process's child named comm (such as kube-apiserver or etcd, which envtest starts), so that its
// CPU and Memory can be read; it was not started by Start, so Stop and Exited do not apply.
func Child(comm string) (*Process, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PPID != os.Getpid() || st.Comm != comm {
			continue
		}
		return &Process{Cmd: &exec.Cmd{Path: comm, Process: &os.Process{Pid: p.PID}}}, nil
	}
	return nil, fmt.Errorf("no child process named %s", comm)
}

// ScrapeAPIServer reads the API server's own Prometheus metrics (/metrics, as the cluster's admin).
func (c *Cluster) ScrapeAPIServer(ctx context.Context) (Metrics, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(string(raw)))
}
