package runtimehook

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// runtimeSide is the runtime's end of NRI: the NRI project's own adaptation (what containerd embeds), listening on a
// socket of the test's, with no pods or containers of its own. It is what containerd does with a plugin's answers
// that the tests assert: the adjustment CreateContainer returns is what containerd applies to the container's OCI
// spec, the updates UpdateContainer returns what it applies to the running container.
type runtimeSide struct {
	t      *testing.T
	socket string
	nri    *adaptation.Adaptation
	synced chan struct{} // a plugin finished its synchronization
}

// startRuntime starts the runtime side on socket.
func startRuntime(t *testing.T, socket string) *runtimeSide {
	t.Helper()
	dir := filepath.Dir(socket)
	r := &runtimeSide{t: t, socket: socket, synced: make(chan struct{}, 8)}
	var syncs atomic.Int32
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		// The first call is Start's, for the plugins the runtime launches itself (none): only a connecting
		// plugin's synchronization counts, or waitForPlugin could return before the plugin is added.
		if syncs.Add(1) > 1 {
			r.synced <- struct{}{}
		}
		return err
	}
	update := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	var err error
	r.nri, err = adaptation.New("containerd", "v2.4.2", syncFn, update,
		adaptation.WithSocketPath(socket), adaptation.WithPluginPath(filepath.Join(dir, "plugins")), adaptation.WithPluginConfigPath(filepath.Join(dir, "conf.d")))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.nri.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.nri.Stop)
	return r
}

// waitForPlugin waits until a plugin has synchronized and been added to the runtime's plugins.
func (r *runtimeSide) waitForPlugin() {
	r.t.Helper()
	select {
	case <-r.synced:
	case <-time.After(20 * time.Second):
		r.t.Fatal("no NRI plugin synchronized with the runtime within 20 s")
	}
	// The runtime adds the plugin after synchronizing it, under the lock BlockPluginSync waits for.
	r.nri.BlockPluginSync().Unblock()
}

// socketDir is a short private directory: a unix socket's path must stay below about 108 bytes, which t.TempDir()'s
// test-named paths can exceed.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// proxy stands between the plugin and the runtime side: the plugin dials its socket, and it relays each connection
// to the runtime's socket. The NRI adaptation drops its external plugins on Stop but leaves their connections open
// (a dying containerd's are closed by the kernel); cut closes them the way the kernel would.
type proxy struct {
	t      *testing.T
	socket string
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, socket, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, socket: socket, target: target, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("unix", p.target)
		if err != nil {
			_ = c.Close() // no runtime listening: the plugin sees its connection refused
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, r)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(r, c); _ = r.Close() }()
		go func() { _, _ = io.Copy(c, r); _ = c.Close() }()
	}
}

// cut closes every relayed connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// testLogger sends the NRI library's log lines (the runtime side's) to the test's log.
type testLogger struct {
	mu sync.Mutex
	t  *testing.T
}

func (l *testLogger) logf(level, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.t != nil {
		l.t.Logf("nri %s: %s", level, fmt.Sprintf(format, args...))
	}
}
func (l *testLogger) Debugf(context.Context, string, ...any) {}
func (l *testLogger) Infof(_ context.Context, f string, a ...any) {
	l.logf("info", f, a...)
}
func (l *testLogger) Warnf(_ context.Context, f string, a ...any) {
	l.logf("warn", f, a...)
}
func (l *testLogger) Errorf(_ context.Context, f string, a ...any) {
	l.logf("error", f, a...)
}

var nriLog = &testLogger{}

func init() { nrilog.Set(nriLog) }

// connected starts the plugin of f against a new runtime side, through a proxy, and waits until both ends say so.
func connected(t *testing.T, f *fixture, opts NRIOptions) (*runtimeSide, *proxy, *Status) {
	t.Helper()
	nriLog.mu.Lock()
	nriLog.t = t
	nriLog.mu.Unlock()
	t.Cleanup(func() { nriLog.mu.Lock(); nriLog.t = nil; nriLog.mu.Unlock() })
	dir := socketDir(t)
	rt := startRuntime(t, filepath.Join(dir, "nri.sock"))
	px := startProxy(t, filepath.Join(dir, "plugin.sock"), rt.socket)
	opts.Socket = px.socket
	st := f.status(t, ModeNRI)
	p := NewNRI(f.deps, f.registry(t), st, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("NRI.Start returned %v after its context ended", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("NRI.Start did not return within 10 s of its context ending")
		}
	})
	rt.waitForPlugin()
	waitForMode(t, st, ModeNRI)
	return rt, px, st
}

func waitForMode(t *testing.T, st *Status, want Mode) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for st.Mode() != want {
		if time.Now().After(deadline) {
			t.Fatalf("mode is %s after 20 s, want %s (status %+v)", st.Mode(), want, st.Info())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sandbox is the runtime's view of pod.
func sandbox(pod *corev1.Pod) *api.PodSandbox {
	return &api.PodSandbox{Id: "sb-" + pod.Name, Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)}
}

// container is the runtime's view of a container being created, with the resources the kubelet asked for a
// BestEffort container (2 shares) and, when cpus is set, a cpuset (as the static CPU manager sends).
func container(sb *api.PodSandbox, id, name, cpus string) *api.Container {
	return &api.Container{
		Id: id, PodSandboxId: sb.Id, Name: name,
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(uint64(2)), Cpus: cpus}, Memory: &api.LinuxMemory{}}},
	}
}

// linuxValues are the resources of an adjustment or update, as containerd would apply them ("" for not set).
type linuxValues struct{ Shares, Quota, Period, Memory, Cpus string }

func valuesOf(r *api.LinuxResources) linuxValues {
	var v linuxValues
	if s := r.GetCpu().GetShares(); s != nil {
		v.Shares = fmt.Sprint(s.GetValue())
	}
	if q := r.GetCpu().GetQuota(); q != nil {
		v.Quota = fmt.Sprint(q.GetValue())
	}
	if p := r.GetCpu().GetPeriod(); p != nil {
		v.Period = fmt.Sprint(p.GetValue())
	}
	if m := r.GetMemory().GetLimit(); m != nil {
		v.Memory = fmt.Sprint(m.GetValue())
	}
	v.Cpus = r.GetCpu().GetCpus()
	return v
}

// answered is how many requests of event the plugin answered with result.
func answered(st *Status, event, result string) int {
	return int(testutil.ToFloat64(st.requests.WithLabelValues(event, result)))
}

// A batch pod's sandbox gets its pod cgroup written and its container the Linux resources of the translation, as
// adjustments the runtime receives; an update of the container names it and carries the same values. On cgroup v1
// the CFS quota is not among them: the plugin writes it to the container's cgroup at StartContainer (runc has made
// the cgroup, the process has not started) and again after an update. An LS pod and a best-effort pod without tier
// resources get nothing.
func TestNRIAdjustsBatchPodsOnly(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, batchPod(), lsPod(), bePod())
	rt, _, st := connected(t, f, NRIOptions{PodWait: time.Second})
	ctx := context.Background()

	batch := sandbox(batchPod())
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: batch}); err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	if diff := cmp.Diff(cgroupFiles{Shares: "2048", Quota: "200000", Period: "100000", Memory: itoa(4 << 30)}, readFiles(t, f.root, batchDir)); diff != "" {
		t.Errorf("batch pod cgroup after RunPodSandbox (-want +got):\n%s", diff)
	}
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	want := linuxValues{Shares: "2048", Memory: itoa(4 << 30)}
	if diff := cmp.Diff(want, valuesOf(created.GetAdjust().GetLinux().GetResources())); diff != "" {
		t.Errorf("batch container adjustment (-want +got):\n%s", diff)
	}
	if got := oomScoreOf(created.GetAdjust()); got != "1000" {
		t.Errorf("batch container's oom_score_adj adjustment = %q, want 1000", got)
	}
	// runc creates the container's cgroup with the adjustment (and the kubelet's unlimited quota), then the runtime
	// tells the plugin before it starts the process.
	ctrDir := batchDir + "/c-batch"
	f.addCgroup(t, ctrDir)
	if err := rt.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	if got := readFile(t, f.root, "cpu/cpu.cfs_quota_us", ctrDir); got != "200000" {
		t.Errorf("container quota after StartContainer = %s, want 200000", got)
	}
	updated, err := rt.nri.UpdateContainer(ctx, &api.UpdateContainerRequest{
		Pod: batch, Container: container(batch, "c-batch", "main", ""),
		LinuxResources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(uint64(2))}, Memory: &api.LinuxMemory{}},
	})
	if err != nil {
		t.Fatalf("UpdateContainer: %v", err)
	}
	var ids []string
	for _, u := range updated.GetUpdate() {
		ids = append(ids, u.GetContainerId())
		if u.GetContainerId() == "c-batch" {
			if diff := cmp.Diff(want, valuesOf(u.GetLinux().GetResources())); diff != "" {
				t.Errorf("batch container update (-want +got):\n%s", diff)
			}
		}
	}
	if diff := cmp.Diff([]string{"c-batch"}, ids); diff != "" {
		t.Errorf("the runtime got updates for containers (-want +got):\n%s", diff)
	}
	// The kubelet's update reset the quota; after it the plugin writes the container's again.
	writeFile(t, f.root, "cpu/cpu.cfs_quota_us", ctrDir, "-1")
	if err := rt.nri.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")}); err != nil {
		t.Fatalf("PostUpdateContainer: %v", err)
	}
	if got := readFile(t, f.root, "cpu/cpu.cfs_quota_us", ctrDir); got != "200000" {
		t.Errorf("container quota after PostUpdateContainer = %s, want 200000", got)
	}

	// Their containers get their class's oom_score_adj and nothing else: the service (256Mi of 8Gi, 969 from the
	// kubelet) 323, the best-effort pod 1000.
	expectOnlyOOMScore(t, rt, lsPod(), "323")
	expectOnlyOOMScore(t, rt, bePod(), "1000")
	if diff := cmp.Diff(kubeletBestEffort, readFiles(t, f.root, beDir)); diff != "" {
		t.Errorf("best-effort pod cgroup changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(kubeletBestEffort, readFiles(t, f.root, lsDir)); diff != "" {
		t.Errorf("LS pod cgroup changed (-want +got):\n%s", diff)
	}
	expectAnswers(t, st, []answers{
		{EventRunPodSandbox, ResultAdjusted, 1}, {EventRunPodSandbox, ResultSkipped, 2},
		{EventCreateContainer, ResultAdjusted, 3},
		{EventUpdateContainer, ResultAdjusted, 1}, {EventUpdateContainer, ResultSkipped, 2},
		{EventStartContainer, ResultAdjusted, 1}, {EventStartContainer, ResultSkipped, 2},
		{EventPostUpdateContainer, ResultAdjusted, 1},
	})
}

// oomScoreOf is the oom_score_adj an adjustment sets, "" for none.
func oomScoreOf(a *api.ContainerAdjustment) string {
	if v := a.GetLinux().GetOomScoreAdj(); v != nil {
		return fmt.Sprint(v.GetValue())
	}
	return ""
}

// expectOnlyOOMScore runs pod's sandbox and creates and updates its container "main": the runtime must get no
// resources and no update, and oomScore as the container's oom_score_adj ("" for none).
func expectOnlyOOMScore(t *testing.T, rt *runtimeSide, pod *corev1.Pod, oomScore string) {
	t.Helper()
	ctx := context.Background()
	sb := sandbox(pod)
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: sb}); err != nil {
		t.Fatalf("RunPodSandbox %s: %v", pod.Name, err)
	}
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: sb, Container: container(sb, "c-"+pod.Name, "main", "")})
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", pod.Name, err)
	}
	if got := valuesOf(created.GetAdjust().GetLinux().GetResources()); got != (linuxValues{}) {
		t.Errorf("%s pod's container was adjusted: %+v", pod.Name, got)
	}
	if got := oomScoreOf(created.GetAdjust()); got != oomScore {
		t.Errorf("%s pod's container got oom_score_adj %q, want %q", pod.Name, got, oomScore)
	}
	if err := rt.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: sb, Container: container(sb, "c-"+pod.Name, "main", "")}); err != nil {
		t.Fatalf("StartContainer %s: %v", pod.Name, err)
	}
	updated, err := rt.nri.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: sb, Container: container(sb, "c-"+pod.Name, "main", ""), LinuxResources: &api.LinuxResources{}})
	if err != nil {
		t.Fatalf("UpdateContainer %s: %v", pod.Name, err)
	}
	for _, u := range updated.GetUpdate() {
		if u != nil {
			t.Errorf("%s pod's container got an update: %v", pod.Name, u)
		}
	}
}

// answers is how many requests of an event the plugin should have answered with a result.
type answers struct {
	event, result string
	want          int
}

func expectAnswers(t *testing.T, st *Status, want []answers) {
	t.Helper()
	for _, c := range want {
		if got := answered(st, c.event, c.result); got != c.want {
			t.Errorf("%s answered %s %d times, want %d", c.event, c.result, got, c.want)
		}
	}
}

// When the runtime restarts, the plugin's connection ends: the mode falls back to the reconciler, and the plugin
// connects to the new runtime on its own and adjusts the containers created after.
func TestNRIReconnectsAfterTheRuntimeRestarts(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, batchPod())
	rt, px, st := connected(t, f, NRIOptions{PodWait: time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	rt.nri.Stop()
	px.cut() // containerd's process ends
	waitForMode(t, st, ModeReconciler)
	if st.Info().LastNRIError == "" {
		t.Error("the status does not say why the plugin disconnected")
	}

	// containerd comes back on the same socket, a while later.
	time.Sleep(300 * time.Millisecond)
	rt2 := startRuntime(t, rt.socket)
	rt2.waitForPlugin()
	waitForMode(t, st, ModeNRI)
	if got := st.Info().Connects; got != 2 {
		t.Errorf("connects = %d, want 2", got)
	}
	batch := sandbox(batchPod())
	created, err := rt2.nri.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-after", "main", "")})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if got := valuesOf(created.GetAdjust().GetLinux().GetResources()); got.Shares != "2048" || got.Memory != itoa(4<<30) {
		t.Errorf("a container created after the restart got %+v, want shares 2048 and 4 GiB", got)
	}
}

// lateStates is a states store that learns of the pod late while a request waits for it: on the second miss.
type lateStates struct {
	*statesinformer.Store
	late   *corev1.Pod
	misses atomic.Int32
}

func (s *lateStates) GetPod(uid types.UID) *statesinformer.PodMeta {
	m := s.Store.GetPod(uid)
	if m == nil && uid == s.late.UID && s.misses.Add(1) == 2 {
		s.SetPod(s.late)
	}
	return m
}

// Whatever goes wrong, the runtime gets no error and the container is created without adjustments: a pod the agent
// does not know (after a bounded wait, short enough that the runtime keeps the plugin), a container the pod's spec
// does not have, a pod cgroup the executor cannot write. A pod the informer learns of during the wait is adjusted.
func TestNRIFailsOpen(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, batchPod())
	late := batchPod()
	late.Name, late.UID = "late", "55555555-5555-5555-5555-555555555555"
	f.deps.States = &lateStates{Store: f.store, late: late}
	rt, _, st := connected(t, f, NRIOptions{PodWait: 300 * time.Millisecond})
	ctx := context.Background()

	unknown := batchPod()
	unknown.Name, unknown.UID = "unknown", "44444444-4444-4444-4444-444444444444"
	sb := sandbox(unknown)
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: sb}); err != nil {
		t.Errorf("RunPodSandbox of an unknown pod failed: %v", err)
	}
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: sb, Container: container(sb, "c-unknown", "main", "")})
	if err != nil {
		t.Errorf("CreateContainer of an unknown pod failed: %v", err)
	}
	if got := valuesOf(created.GetAdjust().GetLinux().GetResources()); got != (linuxValues{}) {
		t.Errorf("an unknown pod's container was adjusted: %+v", got)
	}

	batch := sandbox(batchPod())
	created, err = rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-other", "not-in-the-spec", "")})
	if err != nil {
		t.Errorf("CreateContainer of an unknown container failed: %v", err)
	}
	if got := valuesOf(created.GetAdjust().GetLinux().GetResources()); got != (linuxValues{}) {
		t.Errorf("an unknown container was adjusted: %+v", got)
	}

	// cpu.shares is a directory: the executor's write fails.
	if err := os.Remove(filepath.Join(f.root, "cpu", batchDir, "cpu.shares")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.root, "cpu", batchDir, "cpu.shares"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: batch}); err != nil {
		t.Errorf("RunPodSandbox failed with the pod cgroup unwritable: %v", err)
	}

	lsb := sandbox(late)
	created, err = rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: lsb, Container: container(lsb, "c-late", "main", "")})
	if err != nil || valuesOf(created.GetAdjust().GetLinux().GetResources()).Shares != "2048" {
		t.Errorf("a pod the informer learned of during the wait was not adjusted: %v %+v", err, created.GetAdjust())
	}

	expectAnswers(t, st, []answers{
		{EventRunPodSandbox, ResultPodUnknown, 1}, {EventCreateContainer, ResultPodUnknown, 1},
		{EventCreateContainer, ResultContainerUnknown, 1}, {EventRunPodSandbox, ResultError, 1},
		{EventCreateContainer, ResultAdjusted, 1},
	})
	// The waits stayed within the runtime's request timeout: it kept the plugin.
	if info := st.Info(); info.Mode != ModeNRI || info.Connects != 1 {
		t.Errorf("after the failed-open requests the status is %+v; want the first connection still up", info)
	}
}
