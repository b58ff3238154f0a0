// Command nodeallocation is the node-allocation benchmark (`make bench-nodeallocation`). On an envtest API server
// (kube-apiserver v1.36.3, etcd v3.6) it creates a large cluster of nodes and bound pods, then reports in one run:
//
//   - the time of `kubectl glean nodes --live` against `kubectl get pods -A -o json` (kubectl v1.36.3, default
//     chunk size) and against `kubectl describe nodes` for every node;
//   - gleaner-manager's initial sync of every NodeAllocation, and `kubectl glean nodes` reading them;
//   - the pod-create-to-status latency (p50/p99) under a churn of pod creations and deletions, measured from just
//     before the create (or delete) call to the moment a watch shows the node's NodeAllocation counting it;
//   - gleaner-manager's peak RSS (VmHWM).
//
// The binaries are given by flag (the Makefile target builds them); nothing here is part of `make test`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/hack/bench/benchkit"
)

type config struct {
	assets, glean, manager      string
	nodes, podsPerNode, workers int
	churnRate                   int
	churnFor, deleteAfter       time.Duration
	repeat                      int
	describeNodes               bool
	hold                        bool
	attach                      string
	loaderQPS                   float32
	managerQPS, managerBurst    int
}

func main() {
	var c config
	fs := flag.NewFlagSet("nodeallocation", flag.ExitOnError)
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver, etcd and kubectl v1.36.3")
	fs.StringVar(&c.glean, "glean", "bin/kubectl-glean", "kubectl-glean binary")
	fs.StringVar(&c.manager, "manager", "bin/gleaner-manager", "gleaner-manager binary")
	fs.IntVar(&c.nodes, "nodes", 2000, "nodes to create")
	fs.IntVar(&c.podsPerNode, "pods-per-node", 30, "pods bound to each node")
	fs.IntVar(&c.workers, "workers", 16, "parallel creators while filling the cluster")
	fs.IntVar(&c.churnRate, "churn-rate", 50, "pod creations per second during the churn, and as many deletions")
	fs.DurationVar(&c.churnFor, "churn-for", time.Minute, "how long the churn runs")
	fs.DurationVar(&c.deleteAfter, "delete-after", 10*time.Second, "age at which a churn pod is deleted")
	fs.IntVar(&c.repeat, "repeat", 3, "runs of each timed command; the median is reported")
	fs.BoolVar(&c.describeNodes, "describe-nodes", true, "time `kubectl describe nodes` (slow: it makes several requests per node at kubectl's 5 QPS)")
	fs.StringVar(&c.attach, "attach", "", "kubeconfig of a cluster already filled (by a --hold run with the same --nodes and --pods-per-node): measure it instead of starting one")
	fs.BoolVar(&c.hold, "hold", false, "fill the cluster, print its kubeconfig and keep it up until interrupted, measuring nothing")
	loaderQPS := fs.Int("loader-qps", 2000, "client QPS of the benchmark's own loader (burst is twice this)")
	fs.IntVar(&c.managerQPS, "manager-qps", 200, "gleaner-manager --kube-api-qps")
	fs.IntVar(&c.managerBurst, "manager-burst", 400, "gleaner-manager --kube-api-burst")
	_ = fs.Parse(os.Args[1:])
	c.loaderQPS = float32(*loaderQPS)
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.assets == "" {
		return errors.New("--assets (or KUBEBUILDER_ASSETS) is required")
	}
	for _, bin := range []string{c.glean, c.manager, filepath.Join(c.assets, "kubectl")} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("missing binary: %w", err)
		}
	}
	cl, err := benchkit.StartCluster(c.assets, c.attach)
	if err != nil {
		return err
	}
	defer cl.Stop()
	kubeconfig := cl.Kubeconfig
	cs, wc, err := cl.Clients(c.loaderQPS)
	if err != nil {
		return err
	}
	ctx := context.Background()

	r := &results{config: c, loadStart: benchkit.Loadavg()}
	if c.attach == "" {
		start := time.Now()
		if err := fill(ctx, cs, c); err != nil {
			return err
		}
		r.fill = time.Since(start)
		benchkit.Logf("cluster filled in %s", r.fill.Round(time.Second))
	}

	if c.hold {
		fmt.Printf("cluster up; kubeconfig %s; Ctrl-C stops it\n", kubeconfig)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return nil
	}
	kubectl := filepath.Join(c.assets, "kubectl")
	if r.gleanLive, err = benchkit.TimeCmd(c.repeat, c.glean, "--kubeconfig", kubeconfig, "nodes", "--live"); err != nil {
		return err
	}
	if r.getPods, err = benchkit.TimeCmd(c.repeat, kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json"); err != nil {
		return err
	}
	if r.getPodsOnePage, err = benchkit.TimeCmd(c.repeat, kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json", "--chunk-size=0"); err != nil {
		return err
	}
	if r.gleanLiveJSON, err = benchkit.TimeCmd(c.repeat, c.glean, "--kubeconfig", kubeconfig, "nodes", "--live", "-o", "json"); err != nil {
		return err
	}
	if c.describeNodes {
		benchkit.Logf("timing kubectl describe nodes (%d nodes; this takes a while)", c.nodes)
		if r.describe, err = benchkit.TimeCmd(1, kubectl, "--kubeconfig", kubeconfig, "describe", "nodes"); err != nil {
			return err
		}
	}

	if err := managerPhase(ctx, c, kubeconfig, cs, wc, r); err != nil {
		return err
	}
	r.print()
	return nil
}

// fill creates the nodes (with status) and their pods.
func fill(ctx context.Context, cs kubernetes.Interface, c config) error {
	for i := range 20 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace: %w", err)
		}
	}
	if err := benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		n := benchNode(i)
		status := n.Status
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node: %w", err)
		}
		created.Status = status
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return err
	}
	benchkit.Logf("%d nodes created", c.nodes)
	var done atomic.Int64
	total := c.nodes * c.podsPerNode
	return benchkit.Parallel(c.workers, total, func(i int) error {
		p := benchPod(i, fmt.Sprintf("node-%04d", i%c.nodes))
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod: %w", err)
		}
		if n := done.Add(1); n%10000 == 0 {
			benchkit.Logf("%d/%d pods created", n, total)
		}
		return nil
	})
}

func benchNode(i int) *corev1.Node {
	q := resource.MustParse
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{
			"kubernetes.io/hostname": fmt.Sprintf("node-%04d", i), "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3),
		}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{"cpu": q("32"), "memory": q("128Gi"), "pods": q("110"), "ephemeral-storage": q("500Gi"), "hugepages-2Mi": q("0")},
			Allocatable: corev1.ResourceList{"cpu": q("31500m"), "memory": q("125Gi"), "pods": q("110"), "ephemeral-storage": q("450Gi"),
				"hugepages-2Mi": q("0"), "kubernetes.io/batch-cpu": q("12000"), "kubernetes.io/batch-memory": q("40Gi")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
}

// benchPod is one of a few realistic shapes: plain, with limits, with an init container, with a sidecar, batch.
func benchPod(i int, node string) *corev1.Pod {
	q := resource.MustParse
	c := corev1.Container{Name: "app", Image: "registry.example.com/app:v1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q(fmt.Sprintf("%dm", 100+i%9*50)), "memory": q(fmt.Sprintf("%dMi", 128+i%7*64))}}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: fmt.Sprintf("bench-%d", i%20),
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50), "tier": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}},
	}
	switch i % 5 {
	case 1:
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}
	case 2:
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:v1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1"), "memory": q("64Mi")}}}}
	case 3:
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "registry.example.com/proxy:v1", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("50m"), "memory": q("64Mi")}}}}
	case 4:
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"kubernetes.io/batch-cpu": q("500"), "kubernetes.io/batch-memory": q("1Gi")},
			Limits:   corev1.ResourceList{"kubernetes.io/batch-cpu": q("500"), "kubernetes.io/batch-memory": q("1Gi")},
		}
	}
	return p
}

// managerPhase runs gleaner-manager, waits for its initial sync, times the stored read, runs the churn and reads
// the manager's peak RSS.
func managerPhase(ctx context.Context, c config, kubeconfig string, cs kubernetes.Interface, wc client.WithWatch, r *results) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	metricsAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	mgr, err := benchkit.Start(nil, c.manager, "--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", metricsAddr,
		"--metrics-secure=false", // plain HTTP on loopback, which benchkit.Scrape reads
		"--health-probe-bind-address", "0", "--webhook-port=0", "--controllers=nodeallocation",
		"--kube-api-qps", strconv.Itoa(c.managerQPS), "--kube-api-burst", strconv.Itoa(c.managerBurst))
	if err != nil {
		return err
	}
	defer mgr.Stop()
	start := mgr.Started

	// Initial sync: every node's NodeAllocation counts its pods.
	for {
		list := &slov1alpha1.NodeAllocationList{}
		if err := wc.List(ctx, list); err != nil {
			return err
		}
		synced := 0
		for _, na := range list.Items {
			if na.Status.PodCount == int32(c.podsPerNode) {
				synced++
			}
		}
		if synced == c.nodes {
			break
		}
		if exited, err := mgr.Exited(); exited {
			return fmt.Errorf("gleaner-manager exited, see %s: %w", mgr.Log, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.initialSync = time.Since(start)
	r.rssAfterSync = mgr.Memory("VmRSS")
	benchkit.Logf("initial sync of %d NodeAllocations in %s", c.nodes, r.initialSync.Round(time.Millisecond))

	if r.gleanStored, err = benchkit.TimeCmd(c.repeat, c.glean, "--kubeconfig", kubeconfig, "nodes"); err != nil {
		return err
	}
	before, err := benchkit.Scrape(ctx, metricsAddr)
	if err != nil {
		return err
	}
	if err := churn(ctx, c, cs, wc, r); err != nil {
		return err
	}
	after, err := benchkit.Scrape(ctx, metricsAddr)
	if err != nil {
		return err
	}
	r.queueWait = benchkit.HistogramQuantiles(before, after, "workqueue_queue_duration_seconds", map[string]string{"name": "nodeallocation"})
	r.reconcile = benchkit.HistogramQuantiles(before, after, "gleaner_nodeallocation_reconcile_duration_seconds", nil)
	r.peakRSS = mgr.Memory("VmHWM")
	return nil
}

// pending is a churn operation waiting for the node's NodeAllocation to show wantPods.
type pending struct {
	start    time.Time
	wantPods int32
	create   bool
}

// tracker matches churn operations with the NodeAllocation statuses that show them.
type tracker struct {
	mu                               sync.Mutex
	count                            map[string]int32 // pods each node will count once every operation is seen
	waiting                          map[string][]pending
	createLat, deleteLat, createCall []time.Duration
	errs                             error
}

// begin records an operation on node about to be sent.
func (t *tracker) begin(node string, create bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if create {
		t.count[node]++
	} else {
		t.count[node]--
	}
	t.waiting[node] = append(t.waiting[node], pending{start: time.Now(), wantPods: t.count[node], create: create})
}

// sent records how an operation's API call went.
func (t *tracker) sent(create bool, took time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if create {
		t.createCall = append(t.createCall, took)
	}
	t.errs = errors.Join(t.errs, err)
}

// observe settles the operations a NodeAllocation status shows.
func (t *tracker) observe(na *slov1alpha1.NodeAllocation, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.waiting[na.Name]
	for len(q) > 0 && q[0].wantPods == na.Status.PodCount {
		if q[0].create {
			t.createLat = append(t.createLat, now.Sub(q[0].start))
		} else {
			t.deleteLat = append(t.deleteLat, now.Sub(q[0].start))
		}
		q = q[1:]
	}
	t.waiting[na.Name] = q
}

// left is the number of operations no status has shown yet.
func (t *tracker) left() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, q := range t.waiting {
		n += len(q)
	}
	return n
}

// watch feeds the NodeAllocation events of w to observe until w stops.
func (t *tracker) watch(w watch.Interface) {
	for ev := range w.ResultChan() {
		if na, ok := ev.Object.(*slov1alpha1.NodeAllocation); ok && (ev.Type == watch.Modified || ev.Type == watch.Added) {
			t.observe(na, time.Now())
		}
	}
}

// churnOp is one churn operation: create or delete churn pod i.
type churnOp struct {
	create bool
	i      int
}

func churnPod(c config, i int) *corev1.Pod {
	p := benchPod(i, fmt.Sprintf("node-%04d", i%c.nodes))
	p.Name, p.Namespace = fmt.Sprintf("churn-%06d", i), "bench-0"
	return p
}

// send runs operations from ops until it is closed.
func (t *tracker) send(ctx context.Context, c config, cs kubernetes.Interface, ops <-chan churnOp) {
	for o := range ops {
		p := churnPod(c, o.i)
		t.begin(p.Spec.NodeName, o.create)
		start := time.Now()
		var err error
		if o.create {
			_, err = cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		} else {
			err = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
		t.sent(o.create, time.Since(start), err)
	}
}

// churn creates rate pods per second, one per node in turn, and deletes each deleteAfter later, timing every
// operation until a watch on NodeAllocations shows the node counting it.
func churn(ctx context.Context, c config, cs kubernetes.Interface, wc client.WithWatch, r *results) error {
	// Each node must see its operations one at a time, or a status could not be attributed to one operation.
	if perNode := time.Duration(c.nodes) * time.Second / time.Duration(c.churnRate); perNode <= c.deleteAfter+5*time.Second {
		return fmt.Errorf("a node gets a churn pod every %s, too close to --delete-after %s: use more nodes or a lower rate", perNode, c.deleteAfter)
	}
	list := &slov1alpha1.NodeAllocationList{}
	if err := wc.List(ctx, list); err != nil {
		return err
	}
	t := &tracker{count: map[string]int32{}, waiting: map[string][]pending{}}
	for _, na := range list.Items {
		t.count[na.Name] = na.Status.PodCount
	}
	w, err := wc.Watch(ctx, &slov1alpha1.NodeAllocationList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return err
	}
	defer w.Stop()
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); t.watch(w) }()

	ops := make(chan churnOp, 10000)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); t.send(ctx, c, cs, ops) }()
	}
	benchkit.Logf("churn: %d creations and %d deletions per second for %s", c.churnRate, c.churnRate, c.churnFor)
	r.loadBefore = benchkit.Loadavg()
	// Operation k is due at start + k/rate; a late loop catches up rather than slowing the rate down.
	interval := time.Second / time.Duration(c.churnRate)
	start := time.Now()
	lag := int(c.deleteAfter.Seconds()) * c.churnRate
	total := int(c.churnFor.Seconds()) * c.churnRate
	for k := range total {
		time.Sleep(time.Until(start.Add(time.Duration(k) * interval)))
		ops <- churnOp{create: true, i: k}
		if k >= lag {
			ops <- churnOp{create: false, i: k - lag}
		}
	}
	r.churnElapsed, r.loadAfter = time.Since(start), benchkit.Loadavg()
	close(ops)
	wg.Wait()
	if t.errs != nil {
		return fmt.Errorf("churn operations failed: %w", t.errs)
	}
	for deadline := time.Now().Add(30 * time.Second); t.left() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	w.Stop()
	<-watchDone
	// Leave the cluster as it was, so a later --attach run starts from the same counts.
	if err := benchkit.Parallel(16, lag, func(j int) error {
		err := cs.CoreV1().Pods("bench-0").Delete(ctx, fmt.Sprintf("churn-%06d", total-lag+j), metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("deleting the last churn pods: %w", err)
	}
	r.createLat, r.deleteLat, r.createCalls = t.createLat, t.deleteLat, t.createCall
	r.lost, r.churnOps = t.left(), total+(total-lag)
	return nil
}

type results struct {
	config
	fill, initialSync, churnElapsed                                          time.Duration
	gleanLive, gleanLiveJSON, gleanStored, getPods, getPodsOnePage, describe []time.Duration
	createLat, deleteLat, createCalls                                        []time.Duration
	queueWait, reconcile                                                     [2]time.Duration
	loadStart, loadBefore, loadAfter                                         string
	churnOps, lost                                                           int
	rssAfterSync, peakRSS                                                    int64
}

func (r *results) print() {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", float64(a)/float64(b))
	}
	pods := r.nodes * r.podsPerNode
	fmt.Printf("cluster: %d nodes, %d pods (envtest: kube-apiserver v1.36.3, etcd v3.6.8), filled in %s\n\n", r.nodes, pods, r.fill.Round(time.Second))
	fmt.Printf("machine: %d CPUs; 1-minute load average %s at the start, %s and %s at the start and end of the churn\n\n",
		goruntime.NumCPU(), r.loadStart, r.loadBefore, r.loadAfter)
	fmt.Printf("| measurement | median of %d | runs |\n| --- | --- | --- |\n", r.repeat)
	row := func(name string, ds []time.Duration) {
		var all []string
		for _, d := range ds {
			all = append(all, ms(d))
		}
		fmt.Printf("| %s | %s | %s |\n", name, ms(benchkit.Median(ds)), strings.Join(all, ", "))
	}
	row("`kubectl glean nodes --live`", r.gleanLive)
	row("`kubectl glean nodes --live -o json`", r.gleanLiveJSON)
	row("`kubectl get pods -A -o json` (chunks of 500)", r.getPods)
	row("`kubectl get pods -A -o json --chunk-size=0`", r.getPodsOnePage)
	row("`kubectl glean nodes` (NodeAllocations, manager running)", r.gleanStored)
	if len(r.describe) > 0 {
		row("`kubectl describe nodes` (one run)", r.describe)
	}
	fmt.Println()
	fmt.Printf("- glean --live / get pods -A -o json: %s (target <= 1.5x)\n", ratio(benchkit.Median(r.gleanLive), benchkit.Median(r.getPods)))
	if len(r.describe) > 0 {
		fmt.Printf("- describe nodes / glean --live: %s (target >= 20x)\n", ratio(benchkit.Median(r.describe), benchkit.Median(r.gleanLive)))
	}
	fmt.Printf("- gleaner-manager initial sync (%d NodeAllocations created and written): %s; RSS after sync %d MiB\n", r.nodes, s(r.initialSync), r.rssAfterSync>>20)
	fmt.Printf("- churn: %d creations/s + %d deletions/s for %s (%d operations, %d never seen in a status)\n", r.churnRate, r.churnRate, r.churnElapsed.Round(time.Second), r.churnOps, r.lost)
	fmt.Printf("- pod-create-to-status latency: p50 %s, p99 %s, max %s (%d samples; target p99 < 500 ms)\n",
		ms(benchkit.Percentile(r.createLat, 0.5)), ms(benchkit.Percentile(r.createLat, 0.99)), ms(benchkit.Percentile(r.createLat, 1)), len(r.createLat))
	fmt.Printf("- pod-delete-to-status latency: p50 %s, p99 %s, max %s (%d samples)\n",
		ms(benchkit.Percentile(r.deleteLat, 0.5)), ms(benchkit.Percentile(r.deleteLat, 0.99)), ms(benchkit.Percentile(r.deleteLat, 1)), len(r.deleteLat))
	fmt.Printf("  - of which the create call itself: p50 %s, p99 %s; the controller's queue wait p50 %s, p99 %s; its reconcile p50 %s, p99 %s (from its histograms)\n",
		ms(benchkit.Percentile(r.createCalls, 0.5)), ms(benchkit.Percentile(r.createCalls, 0.99)), ms(r.queueWait[0]), ms(r.queueWait[1]), ms(r.reconcile[0]), ms(r.reconcile[1]))
	fmt.Printf("- gleaner-manager peak RSS (VmHWM): %d MiB\n", r.peakRSS>>20)
	fmt.Printf("- client QPS: gleaner-manager %d (burst %d), kubectl-glean 50 (burst 100), kubectl v1.36.3 its defaults, the benchmark's loader %.0f (burst twice that)\n",
		r.managerQPS, r.managerBurst, r.loaderQPS)
}
