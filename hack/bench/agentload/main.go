// Command agentload is the agents' API-server benchmark (`make bench-agentload`, docs/benchmarks.md). On an envtest
// API server (kube-apiserver v1.36.3, etcd v3.6) it creates N nodes with 30 pods, a NodeMetric, a NodeSLO and a
// Lease each, then runs N simulated gleaner-agents and N simulated kubelets in this process and measures the API
// server's CPU, memory, open watches and the bytes written, for kubelets alone, both, and agents alone.
//
// An agent here is the agent's own code where it talks to the API server: statesinformer.New's cache (its pod watch
// by spec.nodeName and its Node, NodeSLO and NodeMetric watches by metadata.name, with the agent's transform), and
// the reporter's write (a merge patch of the NodeMetric status with an optimistic lock, once a report interval, the
// status shaped by reporter.Build for 30 pods). A kubelet is its traffic that scales with nodes: the pod watch by
// spec.nodeName, a Lease renew every 10 s and a Node status patch every 5 minutes.
//
// Every simulated node has its own HTTP/2 connection (its own transport), as each real agent and kubelet has: what
// the API server holds per connection is part of the bill. --connections=shared puts everything on one pool.
//
// Nothing here is part of `make test`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/hack/bench/benchkit"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

type config struct {
	assets         string
	nodes          int
	podsPerNode    int
	workers        int
	loaderQPS      float32
	settle, window time.Duration
	reportInterval time.Duration
	leaseInterval  time.Duration
	statusInterval time.Duration
	podRecords     bool
	shared         bool
	modes          []string
}

func main() {
	var c config
	fs := flag.NewFlagSet("agentload", flag.ExitOnError)
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver and etcd v1.36.3")
	fs.IntVar(&c.nodes, "agents", 1000, "simulated nodes: one agent and one kubelet each")
	fs.IntVar(&c.podsPerNode, "pods-per-node", 30, "pods bound to each node")
	fs.IntVar(&c.workers, "workers", 16, "parallel creators while filling the cluster")
	loaderQPS := fs.Int("loader-qps", 2000, "client QPS of the benchmark's own loader (burst is twice this)")
	fs.DurationVar(&c.settle, "settle", 20*time.Second, "wait after a change of who runs before measuring")
	fs.DurationVar(&c.window, "window", 45*time.Second, "measurement period of each mode")
	fs.DurationVar(&c.reportInterval, "report-interval", time.Minute, "the agents' NodeMetric report interval (reportIntervalSeconds; default 60 s)")
	fs.DurationVar(&c.leaseInterval, "lease-interval", 10*time.Second, "the kubelets' Lease renew interval (a quarter of nodeLeaseDurationSeconds, 40 s)")
	fs.DurationVar(&c.statusInterval, "node-status-interval", 5*time.Minute, "the kubelets' Node status patch interval (nodeStatusReportFrequency, 5m)")
	fs.BoolVar(&c.podRecords, "pod-records", true, "the NodeMetric status lists every pod's usage (false: node-level figures only)")
	connections := fs.String("connections", "node", "node: one HTTP/2 connection per simulated agent and kubelet; shared: one pool for all")
	modes := fs.String("modes", "kubelets,both,agents", "what runs in each measured period, in order: kubelets, agents, both")
	_ = fs.Parse(os.Args[1:])
	c.loaderQPS = float32(*loaderQPS)
	c.shared = *connections == "shared"
	if *connections != "node" && !c.shared {
		fmt.Fprintf(os.Stderr, "bench: --connections must be node or shared, got %q\n", *connections)
		os.Exit(2)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m != "kubelets" && m != "agents" && m != "both" {
			fmt.Fprintf(os.Stderr, "bench: --modes: unknown mode %q (kubelets, agents, both)\n", m)
			os.Exit(2)
		}
		c.modes = append(c.modes, m)
	}
	// The agents' informers log a line each on sync; thousands of them would bury the results. Failures are counted.
	klog.SetLogger(logr.Discard())
	ctrllog.SetLogger(logr.Discard())
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(c config) error {
	cl, err := benchkit.StartCluster(c.assets, "")
	if err != nil {
		return err
	}
	defer cl.Stop()
	// Interrupted, stop kube-apiserver and etcd too: they would outlive this process and hold gigabytes.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		benchkit.Logf("interrupted: stopping the API server and etcd")
		cl.Stop()
		os.Exit(1)
	}()
	cs, wc, err := cl.Clients(c.loaderQPS)
	if err != nil {
		return err
	}
	ctx := context.Background()
	tmpl, err := statusTemplate(c.podsPerNode)
	if err != nil {
		return err
	}
	if !c.podRecords {
		tmpl.PodsMetric = nil
	}
	start := time.Now()
	if err := fill(ctx, cs, wc, c, tmpl); err != nil {
		return err
	}
	benchkit.Logf("cluster filled in %s", time.Since(start).Round(time.Second))
	apiserver, err := benchkit.Child("kube-apiserver")
	if err != nil {
		return err
	}
	etcd, err := benchkit.Child("etcd")
	if err != nil {
		return err
	}
	b := &bench{c: c, cl: cl, tmpl: tmpl, apiserver: apiserver, etcd: etcd}
	if b.scheme, err = newScheme(); err != nil {
		return err
	}
	if c.shared {
		if b.sharedRT, err = rest.TransportFor(cl.Config); err != nil {
			return err
		}
	}
	time.Sleep(c.settle)
	base, err := b.measure(ctx, "nothing (after the fill)")
	if err != nil {
		return err
	}
	rows := []*sample{base}
	for _, m := range c.modes {
		if err := b.become(ctx, m == "kubelets" || m == "both", m == "agents" || m == "both"); err != nil {
			return err
		}
		time.Sleep(c.settle)
		s, err := b.measure(ctx, m)
		if err != nil {
			return err
		}
		rows = append(rows, s)
	}
	b.become(ctx, false, false) //nolint:errcheck // stopping only
	b.print(rows)
	return nil
}

// bench holds the simulated nodes and what measures the API server.
type bench struct {
	c         config
	cl        *benchkit.Cluster
	scheme    *runtime.Scheme
	tmpl      *slov1alpha1.NodeMetricStatus
	apiserver *benchkit.Process
	etcd      *benchkit.Process
	sharedRT  http.RoundTripper

	kubelets, agents *role
}

// role is one kind of simulated client on every node: its stop, its transports and its traffic counters.
type role struct {
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	transports []http.RoundTripper
	traffic    traffic
	errors     atomic.Int64
	lastErr    atomic.Value
}

// traffic counts what a role sent and received, from its transports.
type traffic struct {
	writes, writeBytes atomic.Int64 // requests with a body (POST, PUT, PATCH) and their body bytes
	readBytes          atomic.Int64 // response bytes of GETs: lists and watch streams
}

func (r *role) fail(err error) {
	r.errors.Add(1)
	r.lastErr.Store(err.Error())
}

// countingTransport counts request bodies and GET response bodies.
type countingTransport struct {
	rt http.RoundTripper
	t  *traffic
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.ContentLength > 0 {
		ct.t.writes.Add(1)
		ct.t.writeBytes.Add(req.ContentLength)
	}
	resp, err := ct.rt.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &ct.t.readBytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// nodeConfig is the client configuration of one simulated client: its own transport (so its own connection), or the
// shared one, with the role's counters around it.
func (b *bench) nodeConfig(r *role, userAgent string) (*rest.Config, error) {
	rt := b.sharedRT
	if rt == nil {
		own := rest.CopyConfig(b.cl.Config)
		// A Proxy function makes client-go's TLS transport cache miss: a transport (and connection) of its own.
		own.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		var err error
		if rt, err = rest.TransportFor(own); err != nil {
			return nil, err
		}
		r.transports = append(r.transports, rt)
	}
	return &rest.Config{Host: b.cl.Config.Host, UserAgent: userAgent, Transport: &countingTransport{rt: rt, t: &r.traffic}}, nil
}

// become starts or stops the kubelets and the agents so that exactly the asked ones run.
func (b *bench) become(ctx context.Context, kubelets, agents bool) error {
	stop := func(r **role, what string) {
		if *r == nil {
			return
		}
		(*r).cancel()
		(*r).wg.Wait()
		for _, rt := range (*r).transports {
			utilnet.CloseIdleConnectionsFor(rt)
		}
		benchkit.Logf("%s stopped", what)
		*r = nil
	}
	if !kubelets {
		stop(&b.kubelets, "kubelets")
	}
	if !agents {
		stop(&b.agents, "agents")
	}
	var err error
	if kubelets && b.kubelets == nil {
		if b.kubelets, err = b.startKubelets(ctx); err != nil {
			return err
		}
	}
	if agents && b.agents == nil {
		if b.agents, err = b.startAgents(ctx); err != nil {
			return err
		}
	}
	return nil
}

// every calls f every interval from a phase of its own (node i of n, evenly spread) until ctx ends.
func every(ctx context.Context, i, n int, interval time.Duration, f func()) {
	first := time.NewTimer(time.Duration(i) * interval / time.Duration(n))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// startKubelets starts a kubelet's API traffic for every node and returns once every pod watch has synced.
func (b *bench) startKubelets(ctx context.Context) (*role, error) {
	r := &role{}
	ctx, r.cancel = context.WithCancel(ctx)
	synced := make([]toolscache.InformerSynced, b.c.nodes)
	for i := range b.c.nodes {
		node := nodeName(i)
		cfg, err := b.nodeConfig(r, "kubelet/"+node)
		if err != nil {
			return nil, err
		}
		cfg.ContentType = runtime.ContentTypeProtobuf // as the kubelet
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		onNode := fields.OneTermEqualSelector("spec.nodeName", node).String()
		lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", func(o *metav1.ListOptions) { o.FieldSelector = onNode })
		inf := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
		synced[i] = inf.HasSynced
		r.wg.Add(3)
		go func() { defer r.wg.Done(); inf.RunWithContext(ctx) }()
		go func() {
			defer r.wg.Done()
			var lease *coordinationv1.Lease
			every(ctx, i, b.c.nodes, b.c.leaseInterval, func() {
				if err := renewLease(ctx, cs, node, &lease); err != nil && ctx.Err() == nil {
					r.fail(err)
				}
			})
		}()
		go func() {
			defer r.wg.Done()
			every(ctx, i, b.c.nodes, b.c.statusInterval, func() {
				if err := patchNodeStatus(ctx, cs, node); err != nil && ctx.Err() == nil {
					r.fail(err)
				}
			})
		}()
		pace(i, b.c.nodes)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, fmt.Errorf("the kubelets' pod watches did not sync")
	}
	benchkit.Logf("%d kubelets running (pod watches synced)", b.c.nodes)
	return r, nil
}

// pace spreads the start of n clients over about 10 s per 1,000, so that the API server sees a rollout rather than
// one burst of TLS handshakes and lists.
func pace(i, n int) {
	if i < n-1 {
		time.Sleep(10 * time.Millisecond)
	}
}

// renewLease is the kubelet's heartbeat: an update of its Lease's renewTime, the Lease read again after a conflict.
func renewLease(ctx context.Context, cs kubernetes.Interface, node string, lease **coordinationv1.Lease) error {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	if *lease == nil {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		*lease = l
	}
	next := (*lease).DeepCopy()
	next.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	updated, err := leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		*lease = nil
		return err
	}
	*lease = updated
	return nil
}

// patchNodeStatus is the kubelet's periodic status report when nothing changed: a strategic merge patch of its
// conditions' heartbeat times.
func patchNodeStatus(ctx context.Context, cs kubernetes.Interface, node string) error {
	now := metav1.Now().UTC().Format(time.RFC3339)
	var conds []string
	for _, t := range nodeConditions {
		conds = append(conds, fmt.Sprintf(`{"type":%q,"lastHeartbeatTime":%q}`, t, now))
	}
	order := make([]string, len(nodeConditions))
	for i, t := range nodeConditions {
		order[i] = fmt.Sprintf(`{"type":%q}`, t)
	}
	patch := fmt.Sprintf(`{"status":{"$setElementOrder/conditions":[%s],"conditions":[%s]}}`, strings.Join(order, ","), strings.Join(conds, ","))
	_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

var nodeConditions = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}

// startAgents starts an agent's API traffic for every node (the agent's states informer and its report writes) and
// returns once every informer has synced.
func (b *bench) startAgents(ctx context.Context) (*role, error) {
	r := &role{}
	ctx, r.cancel = context.WithCancel(ctx)
	informers := make([]*statesinformer.Informer, b.c.nodes)
	for i := range b.c.nodes {
		node := nodeName(i)
		cfg, err := b.nodeConfig(r, "gleaner-agent/"+node)
		if err != nil {
			return nil, err
		}
		inf, err := statesinformer.New(cfg, b.scheme, node, nil)
		if err != nil {
			return nil, err
		}
		writer, err := client.New(cfg, client.Options{Scheme: b.scheme})
		if err != nil {
			return nil, err
		}
		informers[i] = inf
		r.wg.Add(2)
		go func() {
			defer r.wg.Done()
			if err := inf.Start(ctx); err != nil {
				r.fail(err)
			}
		}()
		go func() {
			defer r.wg.Done()
			if !inf.WaitForSync(ctx) {
				return
			}
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			every(ctx, i, b.c.nodes, b.c.reportInterval, func() {
				if err := b.report(ctx, writer, inf, node, rng); err != nil && ctx.Err() == nil {
					r.fail(err)
				}
			})
		}()
		pace(i, b.c.nodes)
	}
	for _, inf := range informers {
		if !inf.WaitForSync(ctx) {
			return nil, fmt.Errorf("the agents' informers did not sync")
		}
	}
	benchkit.Logf("%d agents running (informers synced)", b.c.nodes)
	return r, nil
}

// report writes the NodeMetric status as the agent's reporter does: a merge patch against the informer's copy with
// an optimistic lock, the object read again after a conflict.
func (b *bench) report(ctx context.Context, writer client.Client, states statesinformer.States, node string, rng *rand.Rand) error {
	nm := states.GetNodeMetric()
	if nm == nil {
		return fmt.Errorf("no NodeMetric %s in the informer", node)
	}
	status := statusFor(b.tmpl, states.GetAllPods(), time.Now(), rng)
	fresh := false
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		base := nm
		if fresh {
			base = &slov1alpha1.NodeMetric{}
			if err := writer.Get(ctx, client.ObjectKey{Name: node}, base); err != nil {
				return err
			}
		}
		fresh = true
		next := base.DeepCopy()
		next.Status = *status
		return writer.Status().Patch(ctx, next, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, slov1alpha1.AddToScheme(s)
}

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// sample is one measured period.
type sample struct {
	mode                  string
	elapsed               time.Duration
	apiCPU, etcdCPU       time.Duration
	apiRSS, apiHeap       int64
	etcdRSS               int64
	watches, watchers     float64
	watchersKnown         bool
	agents, kubelets      trafficDelta
	agentErrs, kubeletErr int64
	lastErr               string
	load                  string
}

// trafficDelta is a role's traffic over a period.
type trafficDelta struct {
	running                       bool
	writes, writeBytes, readBytes int64
}

func (r *role) snapshot() trafficDelta {
	if r == nil {
		return trafficDelta{}
	}
	return trafficDelta{running: true, writes: r.traffic.writes.Load(), writeBytes: r.traffic.writeBytes.Load(), readBytes: r.traffic.readBytes.Load()}
}

func (d trafficDelta) minus(o trafficDelta) trafficDelta {
	return trafficDelta{running: d.running, writes: d.writes - o.writes, writeBytes: d.writeBytes - o.writeBytes, readBytes: d.readBytes - o.readBytes}
}

// measure reads the API server's and etcd's CPU over the window and their memory and watches at its end.
func (b *bench) measure(ctx context.Context, mode string) (*sample, error) {
	benchkit.Logf("measuring %q for %s", mode, b.c.window)
	a0, e0, t0 := b.apiserver.CPU(), b.etcd.CPU(), time.Now()
	ag0, kl0 := b.agents.snapshot(), b.kubelets.snapshot()
	var agErr0, klErr0 int64
	if b.agents != nil {
		agErr0 = b.agents.errors.Load()
	}
	if b.kubelets != nil {
		klErr0 = b.kubelets.errors.Load()
	}
	// The API server's heap in use is sampled through the window and its least kept: a Go heap read at one moment
	// holds garbage of whatever was collected last, the least is close to what stays live.
	minHeap := int64(-1)
	for end := t0.Add(b.c.window); time.Now().Before(end); {
		time.Sleep(min(10*time.Second, time.Until(end)))
		m, err := b.cl.ScrapeAPIServer(ctx)
		if err != nil {
			return nil, err
		}
		if h := int64(m.Sum("go_memstats_heap_inuse_bytes", nil)); minHeap < 0 || h < minHeap {
			minHeap = h
		}
	}
	s := &sample{mode: mode, apiCPU: b.apiserver.CPU() - a0, etcdCPU: b.etcd.CPU() - e0, elapsed: time.Since(t0), load: benchkit.Loadavg()}
	s.agents, s.kubelets = b.agents.snapshot().minus(ag0), b.kubelets.snapshot().minus(kl0)
	if b.agents != nil {
		s.agentErrs = b.agents.errors.Load() - agErr0
		if e, ok := b.agents.lastErr.Load().(string); ok {
			s.lastErr = e
		}
	}
	if b.kubelets != nil {
		s.kubeletErr = b.kubelets.errors.Load() - klErr0
		if e, ok := b.kubelets.lastErr.Load().(string); ok {
			s.lastErr = e
		}
	}
	s.apiRSS, s.etcdRSS = b.apiserver.Memory("VmRSS"), b.etcd.Memory("VmRSS")
	m, err := b.cl.ScrapeAPIServer(ctx)
	if err != nil {
		return nil, err
	}
	s.apiHeap = min(minHeap, int64(m.Sum("go_memstats_heap_inuse_bytes", nil)))
	s.watches = m.Sum("apiserver_longrunning_requests", map[string]string{"verb": "WATCH"})
	if _, ok := m["apiserver_registered_watchers"]; ok {
		s.watchers, s.watchersKnown = m.Sum("apiserver_registered_watchers", nil), true
	}
	benchkit.Logf("%s: API server %.3f cores, RSS %d MiB, %v watches; errors: agents %d, kubelets %d %s",
		mode, s.apiCPU.Seconds()/s.elapsed.Seconds(), s.apiRSS>>20, s.watches, s.agentErrs, s.kubeletErr, s.lastErr)
	return s, nil
}

func (b *bench) print(rows []*sample) {
	c := b.c
	fmt.Printf("\nagentload: %d nodes, %d pods per node; envtest kube-apiserver v1.36.3, etcd v3.6.8; %d CPUs\n", c.nodes, c.podsPerNode, goruntime.NumCPU())
	conn := "one HTTP/2 connection per simulated agent and per simulated kubelet"
	if c.shared {
		conn = "one shared connection pool"
	}
	records := "with per-pod records"
	if !c.podRecords {
		records = "without per-pod records"
	}
	fmt.Printf("agents: report every %s, NodeMetric status %d bytes of JSON %s; kubelets: Lease every %s, Node status every %s; %s\n",
		c.reportInterval, statusSize(b.tmpl), records, c.leaseInterval, c.statusInterval, conn)
	fmt.Printf("each period: %s after the change, measured over %s\n\n", c.settle, c.window)
	fmt.Printf("| running | API server CPU (cores) | API server RSS / least heap in use | etcd CPU (cores) / RSS | open watches | writes/min | request bytes written/min | bytes read by clients/min (lists, watch events) | errors | load |\n")
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range rows {
		perMin := func(v int64) float64 { return float64(v) / s.elapsed.Minutes() }
		writes := s.agents.writes + s.kubelets.writes
		wbytes := s.agents.writeBytes + s.kubelets.writeBytes
		rbytes := s.agents.readBytes + s.kubelets.readBytes
		watches := fmt.Sprintf("%.0f", s.watches)
		if s.watchersKnown {
			watches += fmt.Sprintf(" (%.0f registered watchers)", s.watchers)
		}
		fmt.Printf("| %s | %.3f | %d MiB / %d MiB | %.3f / %d MiB | %s | %.0f | %s | %s | %d | %s |\n",
			s.mode, s.apiCPU.Seconds()/s.elapsed.Seconds(), s.apiRSS>>20, s.apiHeap>>20,
			s.etcdCPU.Seconds()/s.elapsed.Seconds(), s.etcdRSS>>20, watches, perMin(writes), mib(perMin(wbytes)), mib(perMin(rbytes)),
			s.agentErrs+s.kubeletErr, s.load)
	}
	base := rows[0]
	fmt.Printf("\nper 1,000 nodes, over the idle API server holding the same objects (the first row):\n\n")
	fmt.Printf("| running | API server CPU (cores) | API server RSS / least heap in use | open watches | writes/min | request bytes written/min | bytes read by clients/min |\n")
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- |\n")
	k := 1000 / float64(c.nodes)
	for _, s := range rows[1:] {
		perMin := func(v int64) float64 { return float64(v) / s.elapsed.Minutes() * k }
		fmt.Printf("| %s | %.3f | %+.0f MiB / %+.0f MiB | %.0f | %.0f | %s | %s |\n", s.mode,
			(s.apiCPU.Seconds()/s.elapsed.Seconds()-base.apiCPU.Seconds()/base.elapsed.Seconds())*k,
			float64(s.apiRSS-base.apiRSS)/(1<<20)*k, float64(s.apiHeap-base.apiHeap)/(1<<20)*k,
			(s.watches-base.watches)*k, perMin(s.agents.writes+s.kubelets.writes),
			mib(perMin(s.agents.writeBytes+s.kubelets.writeBytes)), mib(perMin(s.agents.readBytes+s.kubelets.readBytes)))
	}
	fmt.Println()
	for _, s := range rows[1:] {
		for _, r := range []struct {
			name string
			d    trafficDelta
		}{{"agents", s.agents}, {"kubelets", s.kubelets}} {
			if r.d.running && r.d.writes > 0 {
				fmt.Printf("%s, %s: %.0f writes/min of %.0f bytes on average; %s/min read\n", s.mode, r.name,
					float64(r.d.writes)/s.elapsed.Minutes(), float64(r.d.writeBytes)/float64(r.d.writes), mib(float64(r.d.readBytes)/s.elapsed.Minutes()))
			}
		}
	}
}

func mib(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
}

// fill creates the namespaces, nodes, pods (by node, in parallel), and each node's Lease, NodeSLO and NodeMetric
// (with a status of the template's size).
func fill(ctx context.Context, cs kubernetes.Interface, wc client.Client, c config, tmpl *slov1alpha1.NodeMetricStatus) error {
	for _, pc := range []struct {
		name  string
		value int32
	}{{"gleaner-prod", 9500}, {"gleaner-mid", 7500}, {"gleaner-batch", 5500}} {
		obj := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating priority class: %w", err)
		}
	}
	for i := range 10 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace: %w", err)
		}
	}
	lease := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	var pods atomic.Int64
	total := c.nodes * c.podsPerNode
	return benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		node := nodeName(i)
		n := benchNode(node)
		status := n.Status
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node: %w", err)
		}
		created.Status = status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing node status: %w", err)
		}
		for k := range c.podsPerNode {
			if _, err := cs.CoreV1().Pods(fmt.Sprintf("bench-%d", k%10)).Create(ctx, benchPod(i, k, node), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod: %w", err)
			}
		}
		renew := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: ptr(int32(40)), RenewTime: &renew}}
		if _, err := cs.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating lease: %w", err)
		}
		if err := wc.Create(ctx, &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
			return fmt.Errorf("creating NodeSLO: %w", err)
		}
		nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}
		if err := wc.Create(ctx, nm); err != nil {
			return fmt.Errorf("creating NodeMetric: %w", err)
		}
		nm.Status = *tmpl.DeepCopy()
		if err := wc.Status().Update(ctx, nm); err != nil {
			return fmt.Errorf("writing NodeMetric status: %w", err)
		}
		if n := pods.Add(int64(c.podsPerNode)); n%20000 < int64(c.podsPerNode) {
			benchkit.Logf("%d/%d pods created", n, total)
		}
		return nil
	})
}

func ptr[T any](v T) *T { return &v }

func benchNode(name string) *corev1.Node {
	q := resource.MustParse
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"cpu": q("32"), "memory": q("128Gi"), "pods": q("110")},
			Allocatable: corev1.ResourceList{"cpu": q("31500m"), "memory": q("125Gi"), "pods": q("110")},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", ContainerRuntimeVersion: "containerd://2.1.0", OSImage: "Ubuntu 24.04 LTS"},
		},
	}
	for _, t := range nodeConditions {
		st := corev1.ConditionFalse
		if t == corev1.NodeReady {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: st, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"})
	}
	return n
}

// benchPod is the k-th pod of node i: of every 10, 6 prod, 1 without priority class, 1 mid, 2 batch.
func benchPod(i, k int, node string) *corev1.Pod {
	q := resource.MustParse
	req := corev1.ResourceList{"cpu": q(fmt.Sprintf("%dm", 100+k%9*50)), "memory": q(fmt.Sprintf("%dMi", 128+k%7*64))}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d-%02d", i, k), Namespace: fmt.Sprintf("bench-%d", k%10),
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", (i+k)%50)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1",
			Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
	switch k % 10 {
	case 0, 1, 2, 3, 4, 5:
		p.Spec.PriorityClassName = "gleaner-prod"
	case 7:
		p.Spec.PriorityClassName = "gleaner-mid"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{slov1alpha1.MidCPU: q("200"), slov1alpha1.MidMemory: q("256Mi")}
	case 8, 9:
		p.Spec.PriorityClassName = "gleaner-batch"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{slov1alpha1.BatchCPU: q("500"), slov1alpha1.BatchMemory: q("1Gi")}
	}
	return p
}
