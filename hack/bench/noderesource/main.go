// Command noderesource is the node-resource benchmark (`make bench-noderesource`). On an envtest API server
// (kube-apiserver v1.36.3, etcd v3.6) it creates nodes with pods of every priority band and a NodeMetric each (the
// status an agent would write), starts gleaner-manager with only the SLO config and noderesource controllers, and
// reports in one run:
//
//   - the time from the manager's start until every node carries kubernetes.io/batch-cpu;
//   - the manager's CPU seconds and peak RSS until then;
//   - its API requests per node (from its client-go metrics), writes separately;
//   - in steady state, the CPU per NodeMetric status update (every NodeMetric is rewritten with a change below
//     resourceDiffThreshold, as an agent's report would) and the writes that causes (none expected).
//
// Nothing here is part of `make test`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/hack/bench/benchkit"
)

type config struct {
	assets, manager             string
	nodes, podsPerNode, workers int
	loaderQPS                   float32
	managerQPS, managerBurst    int
	pprof                       bool
	profileDir                  string
	controllers                 string
	topologyCRD                 string
	runs                        string
	gogc                        string
	reportInterval              time.Duration
	report                      string // the form of the pods' usage in the NodeMetrics: podUsages or podsMetric
	explanationQPS              string // gleaner-manager --noderesource-explanation-qps; "" for its default
	// whole runs gleaner-manager as installed: every controller, leader election, the webhook server with the
	// certificate it generates; otherwise only --controllers, no lease and no webhooks.
	whole bool
	// steady measures the steady state after the first pass (the CPU per NodeMetric update).
	steady bool
	// watchList off starts the manager with client-go's WatchListClient off: its first lists are lists, as against
	// an API server without streaming lists.
	watchList bool
	// scenario, when set, is failover or outage (scenario.go): the run starts from the last run's published
	// values, changes every node's report and measures how the manager(s) bring every node to its new value.
	scenario string
}

func main() {
	var c config
	fs := flag.NewFlagSet("noderesource", flag.ExitOnError)
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver and etcd v1.36.3")
	fs.StringVar(&c.manager, "manager", "bin/gleaner-manager", "gleaner-manager binary")
	fs.IntVar(&c.nodes, "nodes", 2000, "nodes to create")
	fs.IntVar(&c.podsPerNode, "pods-per-node", 30, "pods bound to each node")
	fs.IntVar(&c.workers, "workers", 16, "parallel creators while filling the cluster")
	loaderQPS := fs.Int("loader-qps", 2000, "client QPS of the benchmark's own loader (burst is twice this)")
	fs.IntVar(&c.managerQPS, "manager-qps", 30, "gleaner-manager --kube-api-qps")
	fs.IntVar(&c.managerBurst, "manager-burst", 60, "gleaner-manager --kube-api-burst")
	fs.DurationVar(&c.reportInterval, "report-interval", time.Minute, "steady state: every NodeMetric is rewritten once, spread evenly over this (agents report every 60s)")
	fs.StringVar(&c.report, "report", "podUsages", "form of the pods' usage in the NodeMetrics the benchmark writes: podUsages "+
		"(agents since the compact report) or podsMetric (agents before it); per run with --runs report=...")
	fs.StringVar(&c.explanationQPS, "explanation-qps", "", "gleaner-manager --noderesource-explanation-qps (its default, 10, when empty): "+
		"the steady state starts once every explanation is written, which at 10 per second takes minutes after each first pass")
	fs.StringVar(&c.gogc, "gogc", "50", "GOGC of gleaner-manager (config/manager sets 50; Go's default is 100)")
	fs.BoolVar(&c.pprof, "pprof", false, "print the top of the manager's heap profile at the end (costs the manager some CPU)")
	fs.StringVar(&c.profileDir, "profile-dir", "", "write CPU and heap profiles of the first pass and of the steady state here (pprof files, and the top of each as text)")
	fs.StringVar(&c.runs, "runs", "", "several manager runs on one filled cluster, separated by ';', each overriding flags: "+
		"qps=1000,burst=2000,gogc=100,controllers=nodeallocation+noderesource (the published resources are removed between runs); "+
		"explanationqps=1000, whole=true (every controller, leader election and webhooks), steady=false (no steady state), watchlist=false "+
		"(client-go's streaming lists off), scenario=failover or scenario=outage (scenario.go; from the last run's values)")
	fs.StringVar(&c.controllers, "controllers", "noderesource", "gleaner-manager --controllers (nodeallocation,noderesource for both node controllers)")
	fs.StringVar(&c.topologyCRD, "topology-crd", "test/testenv/crds/noderesourcetopology.yaml",
		"NodeResourceTopology CRD installed in the cluster (with none of its objects), as in clusters with topology-aware scheduling; empty for none")
	c.steady, c.watchList = true, true
	_ = fs.Parse(os.Args[1:])
	c.loaderQPS = float32(*loaderQPS)
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// podRef is what a NodeMetric says of a pod.
type podRef struct {
	name, namespace string
	uid             types.UID
	priority        slov1alpha1.PriorityClass
}

type results struct {
	config
	run                           int
	fill                          time.Duration
	loadStart, loadEnd            string
	untilAll                      time.Duration
	cpuUntilAll                   time.Duration
	rssAtAll, peakRSS             int64
	peakRSSFirstPass              int64
	requests                      map[string]float64 // by HTTP method (lists and watches are GETs), during the initial sync
	writes                        float64
	updates                       int
	steadyCPU                     time.Duration
	steadyReconciles, steadyWrite float64
	steadyPatches                 float64
	scrapeCPU                     time.Duration
	idleCPUPerSecond              float64
	steadyRawCPU, steadyElapsed   time.Duration
	steadyScrapes                 int
	drained                       time.Duration
	steadyRSS                     int64
	reconcile                     [2]time.Duration
	podLists, podWatches          float64 // the API server's LIST requests for pods until every node was published, and the pod watches open then
}

func run(c config) error {
	var extraCRDs []string
	if c.topologyCRD != "" {
		extraCRDs = append(extraCRDs, c.topologyCRD)
	}
	cl, err := benchkit.StartCluster(c.assets, "", extraCRDs...)
	if err != nil {
		return err
	}
	defer cl.Stop()
	cs, wc, err := cl.Clients(c.loaderQPS)
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	pods, err := fill(ctx, cs, wc, c)
	if err != nil {
		return err
	}
	filled := time.Since(start)
	benchkit.Logf("cluster filled in %s", filled.Round(time.Second))
	runs, err := parseRuns(c)
	if err != nil {
		return err
	}
	// With no manager running yet, the benchmark alone on its side of the machine.
	for _, report := range []string{"podsMetric", "podUsages"} {
		perDecode, allocPerDecode, eventSize, err := decodeFloor(pods[0], 5000, report)
		if err != nil {
			return err
		}
		fmt.Printf("floor: decoding one NodeMetric watch event with %s (%d bytes of JSON, %d pods) costs %.3f ms of CPU and allocates %d KiB (in the benchmark's process, 5,000 decodes)\n",
			report, eventSize, len(pods[0]), float64(perDecode)/float64(time.Millisecond), allocPerDecode>>10)
	}
	for i, rc := range runs {
		if rc.scenario != "" {
			if i == 0 {
				return fmt.Errorf("run 1: the %s scenario starts from the values a run before it published", rc.scenario)
			}
			r := &results{config: rc, fill: filled, loadStart: benchkit.Loadavg(), run: i + 1}
			if err := runScenario(ctx, cl, wc, rc, pods, r); err != nil {
				return fmt.Errorf("run %d (%s): %w", i+1, rc.scenario, err)
			}
			continue
		}
		if i > 0 {
			if err := unpublish(ctx, cs, rc); err != nil {
				return err
			}
		}
		if rc.profileDir != "" && len(runs) > 1 {
			rc.profileDir = filepath.Join(rc.profileDir, fmt.Sprintf("run-%d", i+1))
			if err := os.MkdirAll(rc.profileDir, 0o755); err != nil {
				return err
			}
		}
		r := &results{config: rc, fill: filled, loadStart: benchkit.Loadavg(), run: i + 1}
		if err := measure(ctx, cl, wc, rc, pods, r); err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
	}
	return nil
}

// measure starts gleaner-manager as rc says on the filled cluster, measures its first pass and steady state, prints
// the results and stops it.
func measure(ctx context.Context, cl *benchkit.Cluster, wc client.WithWatch, c config, pods [][]podRef, r *results) error {
	metricsAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	pprofAddr := "0"
	if c.pprof || c.profileDir != "" {
		if pprofAddr, err = benchkit.FreeAddr(); err != nil {
			return err
		}
	}
	apiBefore, err := cl.ScrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	mgr, err := startManager(c, cl.Kubeconfig, metricsAddr, pprofAddr)
	if err != nil {
		return err
	}
	defer mgr.Stop()
	firstPassProfile := profileFirstPass(ctx, c, pprofAddr)
	if err := waitAllPublished(ctx, wc, c.nodes, mgr); err != nil {
		return err
	}
	r.untilAll, r.cpuUntilAll, r.rssAtAll = time.Since(mgr.Started), mgr.CPU(), mgr.Memory("VmRSS")
	r.peakRSSFirstPass = mgr.Memory("VmHWM")
	apiAfter, err := cl.ScrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	podRequests := func(verb string) float64 {
		l := map[string]string{"resource": "pods", "verb": verb}
		return apiAfter.Sum("apiserver_request_total", l) - apiBefore.Sum("apiserver_request_total", l)
	}
	// A watch is counted in apiserver_request_total when it ends; the open ones are a gauge.
	r.podLists, r.podWatches = podRequests("LIST"), apiAfter.Sum("apiserver_longrunning_requests", map[string]string{"resource": "pods", "verb": "WATCH"})
	benchkit.Logf("every node carries batch-cpu %s after the manager started", r.untilAll.Round(time.Millisecond))
	if c.profileDir != "" {
		if err := benchkit.Profile(ctx, pprofAddr, "heap", "", c.profileDir, "first-pass.heap"); err != nil {
			return err
		}
	}
	m, err := benchkit.Scrape(ctx, metricsAddr)
	if err != nil {
		return err
	}
	r.requests = map[string]float64{}
	for _, method := range []string{"GET", "PATCH", "PUT", "POST", "DELETE"} {
		r.requests[method] = m.Sum("rest_client_requests_total", map[string]string{"method": method})
	}
	r.writes = m.Sum("gleaner_noderesource_node_writes_total", nil)
	if err := <-firstPassProfile; err != nil {
		return err
	}

	if c.steady {
		if err := steadyState(ctx, wc, c, pods, mgr, metricsAddr, pprofAddr, r); err != nil {
			return err
		}
	}
	r.peakRSS = mgr.Memory("VmHWM")
	r.loadEnd = benchkit.Loadavg()
	r.print()
	if c.profileDir != "" {
		if err := benchkit.Profile(ctx, pprofAddr, "heap", "", c.profileDir, "steady.heap"); err != nil {
			return err
		}
	}
	if c.pprof {
		top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-inuse_space", "-nodecount=25", "http://"+pprofAddr+"/debug/pprof/heap").CombinedOutput()
		fmt.Printf("\nheap in use at the end (go tool pprof -top):\n%s\n", top)
		if err != nil {
			return fmt.Errorf("reading the heap profile: %w", err)
		}
	}
	return nil
}

// profileFirstPass takes a CPU profile of the manager's first pass when c asks for profiles; the channel has its
// error, or nil (at once when no profile is asked for).
func profileFirstPass(ctx context.Context, c config, pprofAddr string) <-chan error {
	done := make(chan error, 1)
	if c.profileDir == "" {
		done <- nil
		return done
	}
	// A CPU profile can only be asked for a fixed time: the floor of the pass plus the start and the first lists,
	// which a fast pass ends before, so its tail is idle.
	seconds := int(max(float64(c.nodes-c.managerBurst)/float64(c.managerQPS), 0)) + 15 + c.nodes/1000
	go func() {
		if err := benchkit.WaitServing(pprofAddr, time.Minute); err != nil {
			done <- err
			return
		}
		done <- benchkit.Profile(ctx, pprofAddr, "profile", fmt.Sprintf("seconds=%d", seconds), c.profileDir, "first-pass.cpu")
	}()
	return done
}

// fill creates the namespaces, priority classes, config, nodes, pods and NodeMetrics, and returns each node's pods.
func fill(ctx context.Context, cs kubernetes.Interface, wc client.Client, c config) ([][]podRef, error) {
	for _, pc := range []struct {
		name  string
		value int32
	}{{"gleaner-prod", 9500}, {"gleaner-mid", 7500}, {"gleaner-batch", 5500}, {"gleaner-free", 3500}} {
		obj := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating priority class: %w", err)
		}
	}
	for i := range 10 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating namespace: %w", err)
		}
	}
	sys := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, sys, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gleaner-system", Name: "slo-controller-config"},
		// A forced update every hour rather than every 5 minutes: the steady state measures a report that changes
		// nothing worth writing, and it starts once the explanations are written, which at the default rate takes
		// longer than 5 minutes after a first pass (every node would be written again in it).
		Data: map[string]string{"colocation-config": `{"enable": true, "updateTimeThresholdSeconds": 3600}`},
	}
	if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the SLO ConfigMap: %w", err)
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
		return nil, err
	}
	benchkit.Logf("%d nodes created", c.nodes)

	pods := make([][]podRef, c.nodes)
	var mu sync.Mutex
	var done atomic.Int64
	total := c.nodes * c.podsPerNode
	if err := benchkit.Parallel(c.workers, total, func(i int) error {
		node := i % c.nodes
		p := benchPod(i, i/c.nodes, nodeName(node))
		created, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod: %w", err)
		}
		mu.Lock()
		pods[node] = append(pods[node], podRef{created.Name, created.Namespace, created.UID, slov1alpha1.ClassOf(created).Priority})
		mu.Unlock()
		if n := done.Add(1); n%10000 == 0 {
			benchkit.Logf("%d/%d pods created", n, total)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	benchkit.Logf("%d pods created", total)

	now := time.Now()
	if err := benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}
		if err := wc.Create(ctx, nm); err != nil {
			return fmt.Errorf("creating NodeMetric: %w", err)
		}
		nm.Status = metricStatus(pods[i], now, 0, c.report)
		return wc.Status().Update(ctx, nm)
	}); err != nil {
		return nil, err
	}
	benchkit.Logf("%d NodeMetrics written", c.nodes)
	return pods, nil
}

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

func benchNode(i int) *corev1.Node {
	q := resource.MustParse
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{
			"kubernetes.io/hostname": nodeName(i), "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3),
		}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"cpu": q("32"), "memory": q("128Gi"), "pods": q("110")},
			Allocatable: corev1.ResourceList{"cpu": q("31500m"), "memory": q("125Gi"), "pods": q("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
}

// benchPod is pod i, the slot-th on its node: of every 10 slots, 6 prod, 1 without priority, 1 mid, 2 batch.
func benchPod(i, slot int, node string) *corev1.Pod {
	q := resource.MustParse
	req := corev1.ResourceList{"cpu": q(fmt.Sprintf("%dm", 100+i%9*50)), "memory": q(fmt.Sprintf("%dMi", 128+i%7*64))}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: fmt.Sprintf("bench-%d", i%10),
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1",
			Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
	switch k := slot % 10; {
	case k < 6:
		p.Spec.PriorityClassName = "gleaner-prod"
	case k == 7:
		p.Spec.PriorityClassName = "gleaner-mid"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			slov1alpha1.MidCPU: q("200"), slov1alpha1.MidMemory: q("256Mi")}
	case k >= 8:
		p.Spec.PriorityClassName = "gleaner-batch"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			slov1alpha1.BatchCPU: q("500"), slov1alpha1.BatchMemory: q("1Gi")}
	}
	return p
}

// metricStatus is the NodeMetric status an agent would report for a node's pods, the pods' usage in the form
// report names (podUsages, or podsMetric as agents before the compact report wrote it); bump shifts the system usage by bump
// millicores: by the steady state's 10s a change far below resourceDiffThreshold, by the scenarios' 4,000 one above it.
func metricStatus(pods []podRef, now time.Time, bump int64, report string) slov1alpha1.NodeMetricStatus {
	q := resource.MustParse
	t := metav1.NewTime(now)
	st := slov1alpha1.NodeMetricStatus{
		UpdateTime: &t,
		NodeMetric: &slov1alpha1.NodeMetricInfo{
			NodeUsage:   corev1.ResourceList{"cpu": q("12"), "memory": q("60Gi")},
			SystemUsage: corev1.ResourceList{"cpu": *resource.NewMilliQuantity(1500+bump, resource.DecimalSI), "memory": q("4Gi")},
		},
		ProdReclaimableMetric: &slov1alpha1.ReclaimableMetric{Resource: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi")}},
	}
	for k, p := range pods {
		st.PodsMetric = append(st.PodsMetric, slov1alpha1.PodMetricInfo{
			Name: p.name, Namespace: p.namespace, UID: string(p.uid), Priority: p.priority, QoS: slov1alpha1.QoSLS,
			Usage: corev1.ResourceList{"cpu": *resource.NewMilliQuantity(int64(50+k%7*20), resource.DecimalSI),
				"memory": *resource.NewQuantity(int64(96+k%5*32)<<20, resource.BinarySI)},
		})
	}
	if report == "podUsages" {
		for _, pm := range st.PodsMetric {
			st.PodUsages = append(st.PodUsages, slov1alpha1.NewPodUsage(pm.UID, pm.EffectivePriority(), pm.Usage, nil))
		}
		st.PodsMetric = nil
	}
	return st
}

// waitAllPublished watches nodes until every one carries batch-cpu.
func waitAllPublished(ctx context.Context, wc client.WithWatch, nodes int, mgr *benchkit.Process) error {
	list := &corev1.NodeList{}
	if err := wc.List(ctx, list); err != nil {
		return err
	}
	has := map[string]bool{}
	for _, n := range list.Items {
		if _, ok := n.Status.Allocatable[slov1alpha1.BatchCPU]; ok {
			has[n.Name] = true
		}
	}
	w, err := wc.Watch(ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return err
	}
	defer w.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(has) < nodes {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the node watch ended with %d of %d nodes published", len(has), nodes)
			}
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type == watch.Modified {
				if _, ok := n.Status.Allocatable[slov1alpha1.BatchCPU]; ok {
					has[n.Name] = true
				}
			}
		case <-tick.C:
			if exited, err := mgr.Exited(); exited {
				return fmt.Errorf("gleaner-manager exited, see %s: %w", mgr.Log, err)
			}
		}
	}
	return nil
}

// steadyState rewrites every NodeMetric status once, spread evenly over the report interval as agents would, with a
// change below the diff threshold, and measures the manager's CPU per update and the writes it made.
func steadyState(ctx context.Context, wc client.Client, c config, pods [][]podRef, mgr *benchkit.Process, addr, pprofAddr string, r *results) error {
	// Let the initial sync's tail settle: every work queue empty (the explanation writer drains at a rate of its
	// own, --noderesource-explanation-qps, after the nodes are published), polled outside the measurement.
	drainStart := time.Now()
	for deadline := drainStart.Add(30 * time.Minute); ; time.Sleep(5 * time.Second) {
		m, err := benchkit.Scrape(ctx, addr)
		if err != nil {
			return err
		}
		if m.Sum("workqueue_depth", nil) == 0 && m.Sum("controller_runtime_active_workers", nil) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager's work queues did not drain in 30 minutes")
		}
	}
	r.drained = time.Since(drainStart)
	time.Sleep(5 * time.Second)
	// What the manager burns doing nothing (GC, tickers), and what serving /metrics costs it (tens of thousands of
	// series at this scale): both are taken out of the CPU per update.
	idle0, idleStart := mgr.CPU(), time.Now()
	time.Sleep(10 * time.Second)
	r.idleCPUPerSecond = (mgr.CPU() - idle0).Seconds() / time.Since(idleStart).Seconds() // CPU seconds per second
	scrape0 := mgr.CPU()
	for range 3 {
		if _, err := benchkit.Scrape(ctx, addr); err != nil {
			return err
		}
	}
	r.scrapeCPU = (mgr.CPU() - scrape0) / 3
	before, err := benchkit.Scrape(ctx, addr)
	if err != nil {
		return err
	}
	cpu0, start := mgr.CPU(), time.Now()
	scrapes := 0
	steadyProfile := make(chan error, 1)
	if c.profileDir != "" {
		seconds := int(c.reportInterval.Seconds())
		go func() {
			steadyProfile <- benchkit.Profile(ctx, pprofAddr, "profile", fmt.Sprintf("seconds=%d", seconds), c.profileDir, "steady.cpu")
		}()
	} else {
		steadyProfile <- nil
	}
	pace := c.reportInterval / time.Duration(c.nodes)
	if err := benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		time.Sleep(time.Until(start.Add(time.Duration(i) * pace)))
		nm := &slov1alpha1.NodeMetric{}
		if err := wc.Get(ctx, client.ObjectKey{Name: nodeName(i)}, nm); err != nil {
			return err
		}
		nm.Status = metricStatus(pods[i], time.Now(), int64(10*r.run), c.report) // a new value every run, or nothing changes
		return wc.Status().Update(ctx, nm)
	}); err != nil {
		return fmt.Errorf("updating NodeMetrics: %w", err)
	}
	r.updates = c.nodes
	// The window ends 5 s after the last update, with no scrape in it: a /metrics scrape costs the manager as much
	// CPU as hundreds of updates (the derivation series of every node), so polling for the end would measure the
	// benchmark. A manager that has not reconciled every update by then is polled; that is reported.
	time.Sleep(5 * time.Second)
	reconciles := func(m benchkit.Metrics) float64 { return m.Sum("gleaner_noderesource_reconcile_duration_seconds", nil) }
	var after benchkit.Metrics
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(2 * time.Second) {
		cpu, now := mgr.CPU(), time.Now()
		if after, err = benchkit.Scrape(ctx, addr); err != nil {
			return err
		}
		if reconciles(after)-reconciles(before) >= float64(c.nodes) {
			r.steadyRawCPU, r.steadyElapsed = cpu-cpu0, now.Sub(start)
			break
		}
		scrapes++
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager reconciled %v of %d NodeMetric updates in 5 minutes", reconciles(after)-reconciles(before), c.nodes)
		}
	}
	r.steadyScrapes = scrapes
	r.steadyCPU = r.steadyRawCPU - time.Duration(scrapes)*r.scrapeCPU - time.Duration(r.idleCPUPerSecond*r.steadyElapsed.Seconds()*float64(time.Second))
	r.steadyRSS = mgr.Memory("VmRSS")
	r.steadyReconciles = reconciles(after) - reconciles(before)
	r.steadyWrite = after.Sum("gleaner_noderesource_node_writes_total", nil) - before.Sum("gleaner_noderesource_node_writes_total", nil)
	r.steadyPatches = after.Sum("rest_client_requests_total", map[string]string{"method": "PATCH"}) - before.Sum("rest_client_requests_total", map[string]string{"method": "PATCH"})
	r.reconcile = benchkit.HistogramQuantiles(before, after, "gleaner_noderesource_reconcile_duration_seconds", nil)
	return <-steadyProfile
}

func (r *results) print() {
	perNode := func(v float64) string { return fmt.Sprintf("%.3f", v/float64(r.nodes)) }
	total := 0.0
	for _, v := range r.requests {
		total += v
	}
	fmt.Printf("\nrun %d\n", r.run)
	fmt.Printf("cluster: %d nodes, %d pods, %d NodeMetrics (envtest: kube-apiserver v1.36.3, etcd v3.6.8), filled in %s\n",
		r.nodes, r.nodes*r.podsPerNode, r.nodes, r.fill.Round(time.Second))
	fmt.Printf("machine: %d CPUs; 1-minute load average %s at the start, %s at the end\n", goruntime.NumCPU(), r.loadStart, r.loadEnd)
	fmt.Printf("%s: %s; NodeResourceTopology CRD: %s; steady-state reports: %s\n\n", r.manager, r.describe(), orNone(r.topologyCRD), r.report)
	fmt.Printf("| measurement | value |\n| --- | --- |\n")
	fmt.Printf("| manager start until every node carries batch-cpu | %.1f s |\n", r.untilAll.Seconds())
	bound := float64(r.nodes-r.managerBurst) / float64(r.managerQPS)
	fmt.Printf("| lower bound of that at one write per node (client rate limiter: (nodes - burst) / qps) | %.1f s |\n", max(bound, 0))
	fmt.Printf("| manager CPU until then | %.1f s |\n", r.cpuUntilAll.Seconds())
	fmt.Printf("| manager RSS then / peak until then (VmHWM) / peak at the end | %d MiB / %d MiB / %d MiB |\n", r.rssAtAll>>20, r.peakRSSFirstPass>>20, r.peakRSS>>20)
	fmt.Printf("| API requests per node until then (all methods) | %s |\n", perNode(total))
	fmt.Printf("| node writes per node (PATCH requests; controller's count) | %s (%s) |\n", perNode(r.requests["PATCH"]), perNode(r.writes))
	fmt.Printf("| requests by HTTP method (lists, watches and discovery are GETs) | GET %.0f, PATCH %.0f, PUT %.0f, POST %.0f, DELETE %.0f |\n",
		r.requests["GET"], r.requests["PATCH"], r.requests["PUT"], r.requests["POST"], r.requests["DELETE"])
	fmt.Printf("| the API server's pod LIST requests until then (a streamed list is a watch and no LIST; a list, one LIST per page) / pod watches open then | %.0f / %.0f |\n", r.podLists, r.podWatches)
	if !r.steady {
		for _, comm := range []string{"kube-apiserver", "etcd"} {
			rss, peak := benchkit.ChildMemory(comm)
			fmt.Printf("| %s RSS at the end / peak (VmHWM) | %d MiB / %d MiB |\n", comm, rss>>20, peak>>20)
		}
		return
	}
	fmt.Printf("| after the pass, until every work queue was empty (explanations written) | %s |\n", r.drained.Round(time.Second))
	fmt.Printf("| steady state: NodeMetric updates (spread over %s) / reconciles they caused | %d / %.0f |\n", r.reportInterval, r.updates, r.steadyReconciles)
	fmt.Printf("| steady state: manager CPU per NodeMetric update, raw (nothing subtracted) | %.3f ms |\n", float64(r.steadyRawCPU)/float64(time.Millisecond)/float64(r.updates))
	fmt.Printf("| steady state: manager CPU per NodeMetric update, net of idle and scrapes | %.3f ms |\n", float64(r.steadyCPU)/float64(time.Millisecond)/float64(r.updates))
	fmt.Printf("| ... measured: %.2f s over %s with %d /metrics scrapes in it (%.0f ms each); idle %.1f ms/s | |\n",
		r.steadyRawCPU.Seconds(), r.steadyElapsed.Round(time.Second), r.steadyScrapes, float64(r.scrapeCPU)/float64(time.Millisecond), 1000*r.idleCPUPerSecond)
	fmt.Printf("| steady state: manager RSS at the end | %d MiB |\n", r.steadyRSS>>20)
	for _, comm := range []string{"kube-apiserver", "etcd"} {
		rss, peak := benchkit.ChildMemory(comm)
		fmt.Printf("| %s RSS at the end / peak (VmHWM) | %d MiB / %d MiB |\n", comm, rss>>20, peak>>20)
	}
	fmt.Printf("| steady state: node writes (changes below the diff threshold) | %.0f (PATCH requests %.0f) |\n", r.steadyWrite, r.steadyPatches)
	fmt.Printf("| steady state: reconcile p50 / p99 (histogram) | %.2f ms / %.2f ms |\n",
		float64(r.reconcile[0])/float64(time.Millisecond), float64(r.reconcile[1])/float64(time.Millisecond))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// parseRuns turns --runs into one config per run: each run is a comma-separated list of qps=, burst=, gogc=,
// controllers= and manager= (a binary, to compare builds on one cluster) overriding the flags; runs are separated by semicolons. No --runs is one run as the flags say.
func parseRuns(c config) ([]config, error) {
	if c.runs == "" {
		if c.report != "podUsages" && c.report != "podsMetric" {
			return nil, fmt.Errorf("--report must be podUsages or podsMetric, not %q", c.report)
		}
		return []config{c}, nil
	}
	var out []config
	for _, spec := range strings.Split(c.runs, ";") {
		rc := c
		for _, kv := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			err := fmt.Errorf("want key=value, got %q", kv)
			if ok {
				err = rc.set(k, v)
			}
			if err != nil {
				return nil, fmt.Errorf("parsing --runs %q: %w", spec, err)
			}
		}
		if rc.report != "podUsages" && rc.report != "podsMetric" {
			return nil, fmt.Errorf("parsing --runs %q: report must be podUsages or podsMetric, not %q", spec, rc.report)
		}
		out = append(out, rc)
	}
	return out, nil
}

// set overrides the setting k of a run (a key of --runs) with v.
func (c *config) set(k, v string) error {
	var err error
	switch k {
	case "qps":
		c.managerQPS, err = strconv.Atoi(v)
	case "burst":
		c.managerBurst, err = strconv.Atoi(v)
	case "gogc":
		c.gogc = v
	case "manager":
		c.manager = v
	case "controllers":
		c.controllers = strings.ReplaceAll(v, "+", ",")
	case "report":
		c.report = v
	case "explanationqps":
		c.explanationQPS = v
	case "whole":
		c.whole, err = strconv.ParseBool(v)
	case "steady":
		c.steady, err = strconv.ParseBool(v)
	case "watchlist":
		c.watchList, err = strconv.ParseBool(v)
	case "scenario":
		if v != "failover" && v != "outage" {
			return fmt.Errorf("scenario must be failover or outage, not %q", v)
		}
		c.scenario, c.whole, c.steady = v, true, false
	default:
		err = fmt.Errorf("unknown key %q (qps, burst, gogc, controllers, manager, report, explanationqps, whole, steady, watchlist, scenario)", k)
	}
	return err
}

// unpublish removes what the last run's manager published from every node, so that the next manager's first pass
// has every node to write.
func unpublish(ctx context.Context, cs kubernetes.Interface, c config) error {
	patch := []byte(`{"status":{"allocatable":{"kubernetes.io/batch-cpu":null,"kubernetes.io/batch-memory":null,"kubernetes.io/mid-cpu":null,"kubernetes.io/mid-memory":null},` +
		`"capacity":{"kubernetes.io/batch-cpu":null,"kubernetes.io/batch-memory":null,"kubernetes.io/mid-cpu":null,"kubernetes.io/mid-memory":null}}}`)
	if err := benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		_, err := cs.CoreV1().Nodes().Patch(ctx, nodeName(i), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		return fmt.Errorf("removing the published resources: %w", err)
	}
	benchkit.Logf("published resources removed from %d nodes", c.nodes)
	time.Sleep(5 * time.Second)
	return nil
}
