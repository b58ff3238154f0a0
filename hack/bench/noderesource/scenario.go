package main

// The recovery scenarios (--runs scenario=failover / scenario=outage): each starts from the batch-cpu the run
// before it published on every node, rewrites every node's report with a system usage 4 cores higher (or back, when
// the run before raised it), so that every node's batch-cpu must change by more than resourceDiffThreshold, and then measures how the whole manager brings every node to its new value:
//
//   - failover: two managers with leader election; the leader is killed (SIGKILL, no lease hand-over) when half the
//     nodes carry their new value, and the standby takes over;
//   - outage: one manager whose connection to the API server goes through a proxy that cuts every connection and
//     refuses new ones for a while, from when a tenth of the nodes carry their new value (mid-pass); a manager that
//     exits is started again, as the kubelet restarts its container.
//
// Throughout, every node's batch-cpu is watched: a node whose value was anything but its old value and then its new
// one (removed, 0, an intermediate or a stale value written again) has flapped.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/hack/bench/benchkit"
)

// leaseKey is gleaner-manager's leader lease with its default --namespace and --leader-election-id.
var leaseKey = client.ObjectKey{Namespace: "gleaner-system", Name: "gleaner-manager.slo.gleaner.sh"}

const (
	// outageFor is how long the API server stays unreachable in the outage scenario: below the leader's 45 s renew
	// deadline.
	outageFor = 30 * time.Second
	// recoveryLimit bounds a scenario's wait for every node's new value.
	recoveryLimit = 20 * time.Minute
)

// startManager starts gleaner-manager on the cluster of kubeconfig as c says, serving plain metrics on metricsAddr.
func startManager(c config, kubeconfig, metricsAddr, pprofAddr string) (*benchkit.Process, error) {
	args := []string{"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false", // plain HTTP on loopback, which benchkit.Scrape reads
		"--health-probe-bind-address", "0", "--pprof-bind-address", pprofAddr,
		"--kube-api-qps", strconv.Itoa(c.managerQPS), "--kube-api-burst", strconv.Itoa(c.managerBurst)}
	if c.whole {
		webhookAddr, err := benchkit.FreeAddr()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(webhookAddr)
		certDir, err := os.MkdirTemp("", "gleaner-bench-webhook-")
		if err != nil {
			return nil, err
		}
		// As installed: every controller, the leader lease, and the webhook server with the certificate the manager
		// generates and keeps in its Secret (the webhook configurations are not installed; the manager says so).
		args = append(args, "--controllers=*", "--leader-elect=true",
			"--webhook-port", port, "--webhook-host", "127.0.0.1", "--webhook-cert-dir", certDir)
	} else {
		args = append(args, "--leader-elect=false", "--controllers="+c.controllers, "--webhook-port=0")
	}
	if c.explanationQPS != "" {
		args = append(args, "--noderesource-explanation-qps", c.explanationQPS)
	}
	env := []string{"GOGC=" + c.gogc}
	if !c.watchList {
		env = append(env, "KUBE_FEATURE_WatchListClient=false")
	}
	return benchkit.Start(env, c.manager, args...)
}

// describe is how the manager of a run was started, for the results.
func (c config) describe() string {
	what := "--controllers=" + c.controllers + ", no leader election, no webhooks"
	if c.whole {
		what = "the whole manager (--controllers=*, leader election, the webhook server)"
	}
	s := fmt.Sprintf("%s; GOGC=%s --kube-api-qps %d --kube-api-burst %d --noderesource-explanation-qps %s",
		what, c.gogc, c.managerQPS, c.managerBurst, cmp.Or(c.explanationQPS, "default"))
	if !c.watchList {
		s += "; KUBE_FEATURE_WatchListClient=false (first lists are lists, not streams)"
	}
	return s
}

// scenarioResults are what a scenario prints.
type scenarioResults struct {
	rewrite                 time.Duration // rewriting every report
	bump                    int64         // the system CPU usage the reports were moved by, millicores
	untilAll                time.Duration // first manager's start until every node carries its new value
	freshAtKill             int
	killToLease, killToAll  time.Duration
	outageFrom, outageUntil time.Duration // after the first manager's start
	restarts                int
	flaps                   []string
	stale                   int
	peakRSS                 []int64
	cpu                     []time.Duration
}

func runScenario(ctx context.Context, cl *benchkit.Cluster, wc client.WithWatch, c config, pods [][]podRef, r *results) error {
	vl, stop, err := watchValues(ctx, wc)
	if err != nil {
		return err
	}
	defer stop()
	old := vl.latest()
	if n := count(old, func(_, v string) bool { return v != "" }); n < c.nodes {
		return fmt.Errorf("%d of %d nodes carry batch-cpu: a scenario starts from what a run before it published", n, c.nodes)
	}
	s := &scenarioResults{bump: 4000}
	// Up by 4 cores from what the fill and the steady states write, or back when a scenario before raised it.
	nm := &slov1alpha1.NodeMetric{}
	if err := wc.Get(ctx, client.ObjectKey{Name: nodeName(0)}, nm); err != nil {
		return err
	}
	if nm.Status.NodeMetric != nil && nm.Status.NodeMetric.SystemUsage.Cpu().MilliValue() > 3000 {
		s.bump = 0
	}
	start := time.Now()
	if err := benchkit.Parallel(c.workers, c.nodes, func(i int) error {
		nm := &slov1alpha1.NodeMetric{}
		if err := wc.Get(ctx, client.ObjectKey{Name: nodeName(i)}, nm); err != nil {
			return err
		}
		nm.Status = metricStatus(pods[i], time.Now(), s.bump, c.report)
		return wc.Status().Update(ctx, nm)
	}); err != nil {
		return fmt.Errorf("rewriting the reports: %w", err)
	}
	s.rewrite = time.Since(start)
	benchkit.Logf("every NodeMetric now reports %dm of system CPU, rewritten in %s", 1500+s.bump, s.rewrite.Round(time.Second))
	switch c.scenario {
	case "failover":
		err = failover(ctx, cl, wc, c, vl, old, s)
	case "outage":
		err = outage(ctx, cl, c, vl, old, s)
	}
	if err != nil {
		return err
	}
	// Let the last writes land, then judge every node's history.
	time.Sleep(15 * time.Second)
	s.flaps, s.stale = vl.judge(old)
	r.loadEnd = benchkit.Loadavg()
	s.print(r)
	return nil
}

func failover(ctx context.Context, cl *benchkit.Cluster, wc client.WithWatch, c config, vl *valueLog, old map[string]string, s *scenarioResults) error {
	var ms []*benchkit.Process
	defer func() {
		for _, m := range ms {
			m.Stop()
		}
	}()
	startOne := func() (*benchkit.Process, error) {
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return nil, err
		}
		m, err := startManager(c, cl.Kubeconfig, addr, "0")
		if err == nil {
			ms = append(ms, m)
		}
		return m, err
	}
	leader, err := startOne()
	if err != nil {
		return err
	}
	leaderID, err := waitLease(ctx, wc, "", leader)
	if err != nil {
		return err
	}
	benchkit.Logf("the leader holds the lease (%s); starting the standby", leaderID)
	standby, err := startOne()
	if err != nil {
		return err
	}
	if err := vl.waitFresh(ctx, old, c.nodes/2, leader); err != nil {
		return err
	}
	s.freshAtKill = vl.fresh(old)
	s.peakRSS = append(s.peakRSS, leader.Memory("VmHWM"))
	s.cpu = append(s.cpu, leader.CPU())
	killed := time.Now()
	if err := leader.Cmd.Process.Kill(); err != nil {
		return err
	}
	benchkit.Logf("leader killed with %d of %d nodes at their new value", s.freshAtKill, c.nodes)
	if _, err := waitLease(ctx, wc, leaderID, standby); err != nil {
		return err
	}
	s.killToLease = time.Since(killed)
	if err := vl.waitFresh(ctx, old, c.nodes, standby); err != nil {
		return err
	}
	s.killToAll = vl.lastChange().Sub(killed)
	s.untilAll = vl.lastChange().Sub(leader.Started)
	s.peakRSS = append(s.peakRSS, standby.Memory("VmHWM"))
	s.cpu = append(s.cpu, standby.CPU())
	return nil
}

func outage(ctx context.Context, cl *benchkit.Cluster, c config, vl *valueLog, old map[string]string, s *scenarioResults) error {
	u, err := url.Parse(cl.Config.Host)
	if err != nil {
		return err
	}
	px, err := startProxy(u.Host)
	if err != nil {
		return err
	}
	defer px.down()
	kubeconfig, err := proxiedKubeconfig(cl.Kubeconfig, "https://"+px.addr)
	if err != nil {
		return err
	}
	addr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	m, err := startManager(c, kubeconfig, addr, "0")
	if err != nil {
		return err
	}
	first := m.Started
	defer func() { m.Stop() }()
	if err := vl.waitFresh(ctx, old, c.nodes/10, m); err != nil {
		return err
	}
	px.down()
	benchkit.Logf("%d of %d nodes at their new value", vl.fresh(old), c.nodes)
	s.outageFrom = time.Since(first)
	benchkit.Logf("the API server is unreachable for the manager (connections cut, new ones refused)")
	time.Sleep(outageFor)
	if err := px.up(); err != nil {
		return err
	}
	s.outageUntil = time.Since(first)
	benchkit.Logf("the API server is reachable again")
	for deadline, tick := time.Now().Add(recoveryLimit), 0; ; time.Sleep(time.Second) {
		if vl.fresh(old) == c.nodes {
			break
		}
		if tick++; tick%10 == 0 {
			benchkit.Logf("%d of %d nodes at their new value", vl.fresh(old), c.nodes)
		}
		if exited, err := m.Exited(); exited {
			// As the kubelet would: the container is started again.
			s.restarts++
			s.peakRSS = append(s.peakRSS, m.Memory("VmHWM"))
			benchkit.Logf("gleaner-manager exited (%v, log %s); starting it again", err, m.Log)
			if m, err = startManager(c, kubeconfig, addr, "0"); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes carry their new batch-cpu %s after the manager started", vl.fresh(old), c.nodes, recoveryLimit)
		}
	}
	s.untilAll = vl.lastChange().Sub(first)
	s.peakRSS = append(s.peakRSS, m.Memory("VmHWM"))
	s.cpu = append(s.cpu, m.CPU())
	return nil
}

func (s *scenarioResults) print(r *results) {
	fmt.Printf("\nrun %d: %s\n", r.run, r.scenario)
	fmt.Printf("cluster: %d nodes, %d pods; 1-minute load average %s at the start, %s at the end\n", r.nodes, r.nodes*r.podsPerNode, r.loadStart, r.loadEnd)
	fmt.Printf("%s: %s\n\n", r.manager, r.describe())
	fmt.Printf("| measurement | value |\n| --- | --- |\n")
	fmt.Printf("| every report rewritten (system CPU usage now %dm: every node's batch-cpu must change) | %.1f s |\n", 1500+s.bump, s.rewrite.Seconds())
	fmt.Printf("| first manager's start until every node carries its new batch-cpu | %.1f s |\n", s.untilAll.Seconds())
	switch r.scenario {
	case "failover":
		fmt.Printf("| nodes at their new value when the leader was killed (SIGKILL) | %d of %d |\n", s.freshAtKill, r.nodes)
		fmt.Printf("| kill until the standby held the lease | %.1f s |\n", s.killToLease.Seconds())
		fmt.Printf("| kill until every node carries its new batch-cpu | %.1f s |\n", s.killToAll.Seconds())
	case "outage":
		fmt.Printf("| API server unreachable (after the manager's start) | %.1f s to %.1f s |\n", s.outageFrom.Seconds(), s.outageUntil.Seconds())
		fmt.Printf("| manager restarts (it exited) | %d |\n", s.restarts)
		fmt.Printf("| API server back until every node carries its new batch-cpu | %.1f s |\n", (s.untilAll - s.outageUntil).Seconds())
	}
	fmt.Printf("| nodes whose batch-cpu was anything but the old value, then the new (flaps) | %d%s |\n", len(s.flaps), examples(s.flaps))
	fmt.Printf("| nodes left at the old value | %d |\n", s.stale)
	rss := make([]string, len(s.peakRSS))
	for i, v := range s.peakRSS {
		rss[i] = fmt.Sprintf("%d MiB", v>>20)
	}
	cpu := make([]string, len(s.cpu))
	for i, v := range s.cpu {
		cpu[i] = fmt.Sprintf("%.1f s", v.Seconds())
	}
	fmt.Printf("| manager peak RSS (VmHWM), each process | %s |\n", strings.Join(rss, ", "))
	fmt.Printf("| manager CPU, each process until it was killed or every node was new | %s |\n", strings.Join(cpu, ", "))
	for _, comm := range []string{"kube-apiserver", "etcd"} {
		rss, peak := benchkit.ChildMemory(comm)
		fmt.Printf("| %s RSS at the end / peak (VmHWM) | %d MiB / %d MiB |\n", comm, rss>>20, peak>>20)
	}
}

func examples(flaps []string) string {
	if len(flaps) == 0 {
		return ""
	}
	return ": " + strings.Join(flaps[:min(3, len(flaps))], "; ")
}

// waitLease waits until the leader lease has a holder other than not, while m runs, and returns the holder.
func waitLease(ctx context.Context, wc client.Client, not string, m *benchkit.Process) (string, error) {
	for deadline := time.Now().Add(recoveryLimit); ; time.Sleep(200 * time.Millisecond) {
		lease := &coordinationv1.Lease{}
		if err := wc.Get(ctx, leaseKey, lease); err == nil && lease.Spec.HolderIdentity != nil {
			if h := *lease.Spec.HolderIdentity; h != "" && h != not {
				return h, nil
			}
		}
		if exited, err := m.Exited(); exited {
			return "", fmt.Errorf("gleaner-manager exited before it held the lease, see %s: %w", m.Log, err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no new holder of lease %s in %s", leaseKey, recoveryLimit)
		}
	}
}

// valueLog records every node's batch-cpu (its allocatable's quantity; "" when absent) as the API server's watch
// shows it, each change once.
type valueLog struct {
	mu   sync.Mutex
	seen map[string][]string
	at   map[string]time.Time // when the watch showed the node's last change
}

func watchValues(ctx context.Context, wc client.WithWatch) (*valueLog, func(), error) {
	vl := &valueLog{seen: map[string][]string{}, at: map[string]time.Time{}}
	relist := func() (string, error) {
		list := &corev1.NodeList{}
		if err := wc.List(ctx, list); err != nil {
			return "", err
		}
		for i := range list.Items {
			vl.record(&list.Items[i])
		}
		return list.ResourceVersion, nil
	}
	rv, err := relist()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				n, ok := ev.Object.(*corev1.Node)
				switch {
				case ev.Type == watch.Error || !ok:
					// Expired: list again (a change in between is seen as its end state).
					if v, err := relist(); err == nil {
						rv = v
					}
					w.Stop()
				case ev.Type == watch.Bookmark:
					rv = n.ResourceVersion
				default:
					rv = n.ResourceVersion
					vl.record(n)
				}
			}
		}
	}()
	return vl, func() { cancel(); <-done }, nil
}

func (vl *valueLog) record(n *corev1.Node) {
	v := ""
	if q, ok := n.Status.Allocatable[slov1alpha1.BatchCPU]; ok {
		v = q.String()
	}
	vl.mu.Lock()
	defer vl.mu.Unlock()
	if seq := vl.seen[n.Name]; len(seq) == 0 || seq[len(seq)-1] != v {
		vl.seen[n.Name] = append(seq, v)
		vl.at[n.Name] = time.Now()
	}
}

// lastChange is when the last node changed last.
func (vl *valueLog) lastChange() time.Time {
	vl.mu.Lock()
	defer vl.mu.Unlock()
	var last time.Time
	for _, t := range vl.at {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// latest is every node's current value.
func (vl *valueLog) latest() map[string]string {
	vl.mu.Lock()
	defer vl.mu.Unlock()
	out := make(map[string]string, len(vl.seen))
	for n, seq := range vl.seen {
		out[n] = seq[len(seq)-1]
	}
	return out
}

// fresh counts the nodes whose value is set and not the old one.
func (vl *valueLog) fresh(old map[string]string) int {
	return count(vl.latest(), func(n, v string) bool { return v != "" && v != old[n] })
}

// waitFresh waits until at least want nodes are fresh, while m runs.
func (vl *valueLog) waitFresh(ctx context.Context, old map[string]string, want int, m *benchkit.Process) error {
	for deadline := time.Now().Add(recoveryLimit); vl.fresh(old) < want; time.Sleep(200 * time.Millisecond) {
		if exited, err := m.Exited(); exited {
			return fmt.Errorf("gleaner-manager exited with %d of %d nodes at their new value, see %s: %w", vl.fresh(old), want, m.Log, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d nodes at their new value, want %d, after %s", vl.fresh(old), want, recoveryLimit)
		}
	}
	return nil
}

// judge returns the nodes that flapped (their history, as "node: old -> ... -> now") and counts those left at
// their old value. A node's history may only be its old value, then one new one.
func (vl *valueLog) judge(old map[string]string) (flaps []string, stale int) {
	vl.mu.Lock()
	defer vl.mu.Unlock()
	for n, seq := range vl.seen {
		switch {
		case len(seq) == 1 && seq[0] == old[n]:
			stale++
		case len(seq) == 2 && seq[0] == old[n] && seq[1] != "":
		default:
			shown := make([]string, len(seq))
			for i, v := range seq {
				shown[i] = cmp.Or(v, "(none)")
			}
			flaps = append(flaps, n+": "+strings.Join(shown, " -> "))
		}
	}
	slices.Sort(flaps)
	return flaps, stale
}

// count is how many of m's entries f holds for.
func count(m map[string]string, f func(k, v string) bool) int {
	n := 0
	for k, v := range m {
		if f(k, v) {
			n++
		}
	}
	return n
}

// proxy forwards TCP connections to the API server until down, which cuts them and refuses new ones until up.
type proxy struct {
	target, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func startProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve(ln)
	return p, nil
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *proxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // went down meanwhile
		p.mu.Unlock()
		_, _ = c.Close(), u.Close()
		return
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); _, _ = u.Close(), c.Close() }()
	_, _ = io.Copy(c, u)
	_, _ = c.Close(), u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *proxy) up() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("listening again on %s: %w", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln)
	return nil
}

// proxiedKubeconfig writes a copy of kubeconfig whose clusters are reached at server, and returns its path.
func proxiedKubeconfig(kubeconfig, server string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	if len(cfg.Clusters) == 0 {
		return "", errors.New("the kubeconfig names no cluster")
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	path := filepath.Join(filepath.Dir(kubeconfig), "kubeconfig-proxied")
	return path, clientcmd.WriteToFile(*cfg, path)
}
