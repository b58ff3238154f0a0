package runtimehook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// The plugin's identity towards the runtime. The index orders plugins that adjust the same container (lower
// first); two plugins setting the same field of one container make the runtime refuse the container, so no other
// plugin on a Gleaner node should set CPU shares, quota or memory limits of batch and mid pods.
const (
	// PluginName is the name the plugin registers under.
	PluginName = "gleaner-agent"
	// PluginIndex is the plugin's index.
	PluginIndex = "50"
)

// The NRI events the plugin answers, the values of the event label of its metrics.
const (
	EventRunPodSandbox   = "RunPodSandbox"
	EventCreateContainer = "CreateContainer"
	EventUpdateContainer = "UpdateContainer"
	// EventStartContainer and EventPostUpdateContainer are answered on cgroup v1 only, where they write the quota.
	EventStartContainer      = "StartContainer"
	EventPostUpdateContainer = "PostUpdateContainer"
)

// NRIOptions configure the NRI plugin.
type NRIOptions struct {
	// Socket is the runtime's NRI socket.
	Socket string
	// PodWait bounds the wait for a pod the states informer does not know yet.
	PodWait time.Duration
	// MinBackoff is the first wait before connecting again, doubled after every failure up to MaxBackoff; a
	// connection that lasted MaxBackoff starts over at MinBackoff. Zero values mean 1 s and 30 s.
	MinBackoff, MaxBackoff time.Duration
}

// podPoll is how often a request looks again for a pod the states informer does not know yet.
const podPoll = 10 * time.Millisecond

// NRI is the runtime hook as an NRI plugin of the container runtime. It is a Runnable: Start connects to the
// runtime's NRI socket through the NRI project's stub and serves the runtime's requests until ctx ends, connecting
// again with backoff whenever the connection ends (the runtime restarts, or is not there yet).
//
// At each request it asks the features of its Registry for their values (the Stage says which request) and
// delivers them: at RunPodSandbox by writing the pod's cgroup through the executor (the kubelet created it before
// the sandbox; the runtime does not own it), at CreateContainer as an adjustment of the container's Linux resources
// (so the container's cgroup has them before its first instruction runs), at UpdateContainer as an update of the
// same resources that names the container (a kubelet resize or CPU-manager update would otherwise reset them).
//
// On cgroup v1 a CFS quota never goes to the runtime: runc writes an adjustment's quota when the kubelet starts the
// container, later than the hook answered, and the kernel refuses a quota above an ancestor's — which CPU
// suppression may have lowered in between, failing the container's start. The container's quota is written through
// the executor instead, fitted to the cgroups above as they are then: at StartContainer (runc has created the
// cgroup, without a quota of its own, so bounded by its pod's; the process has not started) and after an update
// (PostUpdateContainer). See docs/runtime-hook.md.
//
// It fails open: whatever goes wrong, the runtime gets no error and no adjustment, and the container starts as the
// kubelet asked; the reconciler sets its values later. Status counts every answer.
type NRI struct {
	d      Deps
	fs     *Registry
	status *Status
	opts   NRIOptions
	v1     bool

	log            klog.Logger
	requestTimeout atomic.Int64 // the runtime's, from the last connection
}

// NewNRI returns the plugin; d must be complete (see New).
func NewNRI(d Deps, fs *Registry, status *Status, opts NRIOptions) *NRI {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	p := &NRI{d: d, fs: fs, status: status, opts: opts, v1: d.CgroupVersion == cgroup.V1, log: klog.Background()}
	p.requestTimeout.Store(int64(stub.DefaultRequestTimeout))
	return p
}

// Name is the plugin's name as a Runnable.
func (p *NRI) Name() string { return "runtimehook-nri" }

// Start connects and serves until ctx ends; then it disconnects and returns nil. Failing to connect is not an error:
// the reconciler covers the pods meanwhile, and the status says so.
func (p *NRI) Start(ctx context.Context) error {
	p.log = klog.FromContext(ctx)
	backoff := p.opts.MinBackoff
	var lastErr string
	for {
		up, err := p.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if up >= p.opts.MaxBackoff {
			backoff = p.opts.MinBackoff
		}
		switch {
		case up > 0:
			p.log.Info("the NRI connection ended; the reconciler covers new pods until the plugin is back", "socket", p.opts.Socket, "connectedFor", up.Round(time.Millisecond), "reason", err, "retryIn", backoff)
		case err.Error() != lastErr:
			p.log.Info("cannot connect to the runtime's NRI socket; the reconciler covers batch and mid pods meanwhile (docs/runtime-hook.md)", "socket", p.opts.Socket, "reason", err, "retryIn", backoff)
		default:
			p.log.V(2).Info("cannot connect to the runtime's NRI socket", "socket", p.opts.Socket, "reason", err, "retryIn", backoff)
		}
		lastErr = err.Error()
		select {
		case <-ctx.Done():
			return nil
		case <-p.d.Clock.After(backoff):
		}
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
}

// session connects once and serves until the connection or ctx ends. It returns how long it was connected (zero
// when it never was) and why it ended.
func (p *NRI) session(ctx context.Context) (time.Duration, error) {
	h := &handler{p: p}
	st, err := stub.New(h, stub.WithPluginName(PluginName), stub.WithPluginIdx(PluginIndex), stub.WithSocketPath(p.opts.Socket),
		stub.WithLogger(nriLogger{p.log.WithName("nri")}))
	if err != nil {
		return 0, fmt.Errorf("creating the NRI plugin: %w", err)
	}
	if err := st.Start(ctx); err != nil {
		err = fmt.Errorf("registering with the runtime at %s: %w", p.opts.Socket, err)
		p.status.disconnected(ctx, err, false)
		return 0, err
	}
	p.requestTimeout.Store(int64(st.RequestTimeout()))
	since := p.d.Clock.Now()
	p.status.connected(ctx, h.runtime())
	done := make(chan struct{})
	go func() { st.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		st.Stop()
		<-done
		return p.d.Clock.Since(since), ctx.Err()
	}
	err = errors.New("the runtime closed the connection (restarting?)")
	p.status.disconnected(ctx, err, true)
	return p.d.Clock.Since(since), err
}

// handler is what the stub calls: one per connection.
type handler struct {
	p *NRI

	mu          sync.Mutex
	runtimeName string // the runtime's name and version
	runtimeID   string // the runtime's name as container IDs name it ("containerd", "cri-o")
}

var (
	_ stub.ConfigureInterface           = &handler{}
	_ stub.RunPodInterface              = &handler{}
	_ stub.CreateContainerInterface     = &handler{}
	_ stub.StartContainerInterface      = &handler{}
	_ stub.UpdateContainerInterface     = &handler{}
	_ stub.PostUpdateContainerInterface = &handler{}
)

func (h *handler) runtime() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runtimeName
}

// containerID is ctr's ID as the kubelet's container statuses show it ("containerd://<id>"), which names its cgroup.
func (h *handler) containerID(ctr *api.Container) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runtimeID + "://" + ctr.GetId()
}

// Configure records the runtime's name; the events are those handler implements.
func (h *handler) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runtimeName = runtime + " " + version
	h.runtimeID = runtime
	return 0, nil
}

// RunPodSandbox writes the pod values of the features (a batch or mid pod's) to the pod's cgroup through the
// executor.
func (h *handler) RunPodSandbox(ctx context.Context, sb *api.PodSandbox) error {
	h.p.answer(EventRunPodSandbox, sb, nil, func(log klog.Logger) string {
		m := h.p.pod(sb)
		if m == nil {
			return ResultPodUnknown
		}
		dir := h.p.d.Layout.PodDir(m.Pod)
		v, err := h.p.fs.podValues(Target{Stage: StageRunPodSandbox, Pod: m, PodDir: dir})
		if err != nil {
			log.Error(err, "computing the pod cgroup's values failed")
			return ResultError
		}
		if v.Empty() {
			return ResultSkipped
		}
		if err := h.p.d.Executor.Apply(ctx, OwnerNRI, updates(dir, v, "NRI RunPodSandbox of pod "+m.Key())...); err != nil {
			log.Error(err, "writing the pod cgroup failed; the pod starts without it and the reconciler tries again", "dir", dir)
			return ResultError
		}
		log.V(2).Info("pod cgroup set", "dir", dir, "values", v)
		return ResultAdjusted
	})
	return nil
}

// CreateContainer adjusts the Linux resources and the oom_score_adj of a container the features give values (a batch
// or mid pod's; a best-effort pod's that asks for more CPUs than its pod cgroup has; a service's OOM score). On
// cgroup v1 the quota is left out: it is written at StartContainer.
func (h *handler) CreateContainer(_ context.Context, sb *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	var adjust *api.ContainerAdjustment
	h.p.answer(EventCreateContainer, sb, ctr, func(log klog.Logger) string {
		v, _, result := h.p.containerValues(StageCreateContainer, sb, ctr, requestedCPUs(ctr.GetLinux().GetResources()))
		if result != ResultAdjusted {
			return result
		}
		v = h.p.forRuntime(v)
		if !v.Empty() {
			adjust = &api.ContainerAdjustment{}
			setResources(adjust, v)
			if v.OOMScoreAdj != nil {
				adjust.SetLinuxOomScoreAdj(v.OOMScoreAdj)
			}
		}
		log.V(2).Info("container adjusted", "values", v)
		return result
	})
	return adjust, nil, nil
}

// StartContainer, on cgroup v1, writes the container's quota through the executor: runc has created the container's
// cgroup and its process waits for its first instruction. The quota is fitted under the cgroups above as they are
// now, and fitted again and retried if the kernel refuses it (CPU suppression lowered one in between).
func (h *handler) StartContainer(ctx context.Context, sb *api.PodSandbox, ctr *api.Container) error {
	if !h.p.v1 {
		return nil // the quota went into the adjustment
	}
	h.p.answer(EventStartContainer, sb, ctr, func(log klog.Logger) string {
		return h.p.writeQuota(ctx, log, sb, ctr, h.containerID(ctr), false)
	})
	return nil
}

// UpdateContainer puts the features' values into a runtime update of the container. The update names the container
// (an update without an ID is refused by the runtime) and ignores failure, so a refused value never fails the
// kubelet's update. On cgroup v1 the quota is left out: it is written at PostUpdateContainer.
func (h *handler) UpdateContainer(_ context.Context, sb *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	var upd []*api.ContainerUpdate
	h.p.answer(EventUpdateContainer, sb, ctr, func(log klog.Logger) string {
		v, _, result := h.p.containerValues(StageUpdateContainer, sb, ctr, requestedCPUs(res))
		if result != ResultAdjusted {
			return result
		}
		v = h.p.forRuntime(v)
		if !v.Empty() {
			u := &api.ContainerUpdate{ContainerId: ctr.GetId()}
			u.SetIgnoreFailure()
			setResources(u, v)
			upd = []*api.ContainerUpdate{u}
		}
		log.V(2).Info("container update adjusted", "values", v)
		return result
	})
	return upd, nil
}

// PostUpdateContainer, on cgroup v1, writes the container's quota through the executor again after the runtime
// updated it (the kubelet's update may have carried a quota of its own).
func (h *handler) PostUpdateContainer(ctx context.Context, sb *api.PodSandbox, ctr *api.Container) error {
	if !h.p.v1 {
		return nil
	}
	h.p.answer(EventPostUpdateContainer, sb, ctr, func(log klog.Logger) string {
		return h.p.writeQuota(ctx, log, sb, ctr, h.containerID(ctr), true)
	})
	return nil
}

// quotaTries bounds how often writeQuota fits and writes a quota the kernel refused.
const quotaTries = 3

// writeQuota writes container ctr's quota from the features, fitted at StageStartContainer, through the executor.
// again says the file may hold another value than the executor last wrote (the runtime just updated it).
func (p *NRI) writeQuota(ctx context.Context, log klog.Logger, sb *api.PodSandbox, ctr *api.Container, containerID string, again bool) string {
	v, dir, result := p.containerValues(StageStartContainer, sb, ctr, "")
	if result != ResultAdjusted {
		return result
	}
	if !v.HasQuota() {
		return ResultSkipped
	}
	cdir, err := p.d.Layout.ContainerDir(dir, containerID)
	if err != nil {
		log.Error(err, "naming the container's cgroup failed")
		return ResultError
	}
	if again {
		if q, err := p.d.Cgroups.CPUQuota(cdir); err == nil && q != v.CPUQuota {
			p.d.Executor.Forget(func(d string) bool { return d == cdir }) // the executor's record of the file is stale
		}
	}
	reason := "NRI " + StageStartContainer.String() + " of pod " + sb.GetNamespace() + "/" + sb.GetName() + " container " + ctr.GetName()
	for try := 1; ; try++ {
		err = p.d.Executor.Apply(ctx, OwnerNRI, executor.Update{Dir: cdir, Value: executor.CPUQuota(v.CPUQuota), Reason: reason})
		if err == nil {
			log.V(2).Info("container quota set", "dir", cdir, "quota", v.CPUQuota)
			return ResultAdjusted
		}
		if try == quotaTries {
			log.Error(err, "writing the container's quota failed; it runs within its pod cgroup's until the reconciler's next round", "dir", cdir)
			return ResultError
		}
		if v, _, result = p.containerValues(StageStartContainer, sb, ctr, ""); result != ResultAdjusted || !v.HasQuota() {
			return result
		}
	}
}

// forRuntime is v as it may go to the runtime: on cgroup v1 without a quota (see NRI).
func (p *NRI) forRuntime(v Values) Values {
	if p.v1 {
		v.CPUQuota = cgroup.CPUQuota{}
	}
	return v
}

// answer runs one request's work, never letting a panic reach the runtime, and counts its result.
func (p *NRI) answer(event string, sb *api.PodSandbox, ctr *api.Container, work func(klog.Logger) string) {
	start := p.d.Clock.Now()
	log := p.log.WithValues("event", event, "pod", sb.GetNamespace()+"/"+sb.GetName())
	if ctr != nil {
		log = log.WithValues("container", ctr.GetName(), "containerID", ctr.GetId())
	}
	result := ResultError
	defer func() {
		if r := recover(); r != nil {
			log.Error(fmt.Errorf("panic: %v", r), "the runtime hook failed; the container starts without adjustments")
		}
		if result != ResultAdjusted && result != ResultSkipped {
			log.Info("runtime hook failed open: no adjustment, the reconciler sets the values later", "result", result)
		}
		p.status.request(event, result, p.d.Clock.Since(start))
	}()
	result = work(log)
}

// containerValues are the features' values for container ctr of sandbox sb at stage, whose runtime asks for the
// cpuset requested ("" for none), and the pod's cgroup. The result is ResultAdjusted when there is anything to set.
func (p *NRI) containerValues(stage Stage, sb *api.PodSandbox, ctr *api.Container, requested string) (Values, string, string) {
	m := p.pod(sb)
	if m == nil {
		return Values{}, "", ResultPodUnknown
	}
	dir := p.d.Layout.PodDir(m.Pod)
	v, err := p.fs.containerValues(Target{Stage: stage, Pod: m, PodDir: dir, Container: ctr.GetName(), RequestedCPUs: requested})
	switch {
	case errors.Is(err, ErrContainerUnknown):
		return Values{}, dir, ResultContainerUnknown
	case err != nil:
		p.log.Error(err, "computing a container's values failed", "pod", m.Key(), "container", ctr.GetName())
		return Values{}, dir, ResultError
	case v.Empty():
		return Values{}, dir, ResultSkipped
	}
	return v, dir, ResultAdjusted
}

// pod finds the sandbox's pod among the states informer's, waiting a little for a pod it does not know yet (its
// watch and the kubelet's see a new pod at about the same time, and the kubelet has work to do before the sandbox).
func (p *NRI) pod(sb *api.PodSandbox) *statesinformer.PodMeta {
	wait := min(p.opts.PodWait, time.Duration(p.requestTimeout.Load())/2)
	deadline := p.d.Clock.Now().Add(wait)
	for {
		if m := p.find(sb); m != nil {
			return m
		}
		if !p.d.Clock.Now().Before(deadline) {
			return nil
		}
		p.d.Clock.Sleep(podPoll)
	}
}

// find looks a sandbox's pod up by UID, or, for a static pod (whose API-server mirror has a UID of its own), by
// namespace, name and the UID the kubelet gave it.
func (p *NRI) find(sb *api.PodSandbox) *statesinformer.PodMeta {
	if m := p.d.States.GetPod(types.UID(sb.GetUid())); m != nil {
		return m
	}
	for _, m := range p.d.States.GetAllPods() {
		if m.Pod.Namespace == sb.GetNamespace() && m.Pod.Name == sb.GetName() && string(cgroup.PodUID(m.Pod)) == sb.GetUid() {
			return m
		}
	}
	return nil
}

// requestedCPUs is the cpuset in a runtime's resources, "" for none.
func requestedCPUs(r *api.LinuxResources) string { return r.GetCpu().GetCpus() }

// resourceSetter is what ContainerAdjustment and ContainerUpdate have in common.
type resourceSetter interface {
	SetLinuxCPUShares(uint64)
	SetLinuxCPUQuota(int64)
	SetLinuxCPUPeriod(int64)
	SetLinuxMemoryLimit(int64)
	SetLinuxCPUSetCPUs(string)
}

func setResources(s resourceSetter, v Values) {
	if v.CPUShares > 0 {
		s.SetLinuxCPUShares(v.CPUShares)
	}
	if v.HasQuota() {
		s.SetLinuxCPUQuota(v.CPUQuota.Quota.Microseconds())
		s.SetLinuxCPUPeriod(v.CPUQuota.Period.Microseconds())
	}
	if v.MemoryLimit > 0 {
		s.SetLinuxMemoryLimit(v.MemoryLimit)
	}
	if !v.CPUs.IsEmpty() {
		s.SetLinuxCPUSetCPUs(v.CPUs.String())
	}
}

// nriLogger sends the NRI stub's log lines to the agent's logger: its chatter (registering, configuring) at
// verbosity 2, since the agent logs the connection itself.
type nriLogger struct{ log klog.Logger }

func (l nriLogger) Debugf(_ context.Context, format string, args ...any) {
	l.log.V(4).Info(fmt.Sprintf(format, args...))
}

func (l nriLogger) Infof(_ context.Context, format string, args ...any) {
	l.log.V(2).Info(fmt.Sprintf(format, args...))
}

func (l nriLogger) Warnf(_ context.Context, format string, args ...any) {
	l.log.Info(fmt.Sprintf(format, args...))
}

func (l nriLogger) Errorf(_ context.Context, format string, args ...any) {
	l.log.Error(nil, fmt.Sprintf(format, args...))
}
