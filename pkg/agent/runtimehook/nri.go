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
	"k8s.io/utils/cpuset"

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
// It answers RunPodSandbox by writing the pod's cgroup through the executor (the kubelet created it before the
// sandbox; the runtime does not own it), CreateContainer with an adjustment of the container's Linux resources
// (so the container's cgroup has them before its first instruction runs), and UpdateContainer with an update of the
// same resources that names the container (a kubelet resize or CPU-manager update would otherwise reset them). It
// fails open: whatever goes wrong, the runtime gets no error and no adjustment, and the container starts as the
// kubelet asked; the reconciler sets its values later. Status counts every answer.
type NRI struct {
	d      Deps
	status *Status
	opts   NRIOptions
	fit    fitter

	log            klog.Logger
	requestTimeout atomic.Int64 // the runtime's, from the last connection
}

// NewNRI returns the plugin; d must be complete (see New).
func NewNRI(d Deps, status *Status, opts NRIOptions) *NRI {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	p := &NRI{d: d, status: status, opts: opts, fit: d.fitter(), log: klog.Background()}
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
	runtimeName string
}

var (
	_ stub.ConfigureInterface       = &handler{}
	_ stub.RunPodInterface          = &handler{}
	_ stub.CreateContainerInterface = &handler{}
	_ stub.UpdateContainerInterface = &handler{}
)

func (h *handler) runtime() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runtimeName
}

// Configure records the runtime's name; the events are those handler implements.
func (h *handler) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runtimeName = runtime + " " + version
	return 0, nil
}

// RunPodSandbox writes a batch or mid pod's own cgroup through the executor.
func (h *handler) RunPodSandbox(ctx context.Context, sb *api.PodSandbox) error {
	h.p.answer(EventRunPodSandbox, sb, nil, func(log klog.Logger) string {
		m := h.p.pod(sb)
		if m == nil {
			return ResultPodUnknown
		}
		plan, ok := Translate(m.Pod)
		if !ok {
			return ResultSkipped
		}
		dir := h.p.d.Layout.PodDir(m.Pod)
		v := h.p.fit.podValues(dir, plan)
		if err := h.p.d.Executor.Apply(ctx, OwnerNRI, updates(dir, v, "NRI RunPodSandbox of batch/mid pod "+m.Key())...); err != nil {
			log.Error(err, "writing the pod cgroup failed; the pod starts without it and the reconciler tries again", "dir", dir)
			return ResultError
		}
		log.V(2).Info("pod cgroup set", "dir", dir, "values", v)
		return ResultAdjusted
	})
	return nil
}

// CreateContainer adjusts the Linux resources of a batch or mid pod's container, and the cpuset of a best-effort
// pod's container that asks for more CPUs than its pod cgroup has.
func (h *handler) CreateContainer(_ context.Context, sb *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	var adjust *api.ContainerAdjustment
	h.p.answer(EventCreateContainer, sb, ctr, func(log klog.Logger) string {
		v, cpus, result := h.p.containerValues(sb, ctr, requestedCPUs(ctr.GetLinux().GetResources()))
		if result != ResultAdjusted {
			return result
		}
		adjust = &api.ContainerAdjustment{}
		setResources(adjust, v, cpus)
		log.V(2).Info("container adjusted", "values", v, "cpus", cpus.String())
		return result
	})
	return adjust, nil, nil
}

// UpdateContainer puts the hook's values into a runtime update of a batch or mid pod's container. The update names
// the container (an update without an ID is refused by the runtime) and ignores failure, so a refused value
// never fails the kubelet's update.
func (h *handler) UpdateContainer(_ context.Context, sb *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	var upd []*api.ContainerUpdate
	h.p.answer(EventUpdateContainer, sb, ctr, func(log klog.Logger) string {
		v, cpus, result := h.p.containerValues(sb, ctr, requestedCPUs(res))
		if result != ResultAdjusted {
			return result
		}
		u := &api.ContainerUpdate{ContainerId: ctr.GetId()}
		u.SetIgnoreFailure()
		setResources(u, v, cpus)
		upd = []*api.ContainerUpdate{u}
		log.V(2).Info("container update adjusted", "values", v, "cpus", cpus.String())
		return result
	})
	return upd, nil
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

// containerValues are the values for container ctr of sandbox sb, whose runtime asks for the cpuset requested (""
// for none): the translation fitted under the pod cgroup for a batch or mid pod, and the pod cgroup's cpuset where a
// best-effort pod's container asks for more. The result is ResultAdjusted when there is anything to set.
func (p *NRI) containerValues(sb *api.PodSandbox, ctr *api.Container, requested string) (Values, cpuset.CPUSet, string) {
	m := p.pod(sb)
	if m == nil {
		return Values{}, cpuset.CPUSet{}, ResultPodUnknown
	}
	dir := p.d.Layout.PodDir(m.Pod)
	var v Values
	if plan, ok := Translate(m.Pod); ok {
		cv, ok := plan.Containers[ctr.GetName()]
		if !ok {
			return Values{}, cpuset.CPUSet{}, ResultContainerUnknown
		}
		v = p.fit.containerValues(dir, nil, cv)
	}
	var cpus cpuset.CPUSet
	narrow := false
	if m.BestEffort {
		cpus, narrow = p.fit.cpuSet(dir, requested)
	}
	if v.Empty() && !narrow {
		return Values{}, cpuset.CPUSet{}, ResultSkipped
	}
	return v, cpus, ResultAdjusted
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

func setResources(s resourceSetter, v Values, cpus cpuset.CPUSet) {
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
	if !cpus.IsEmpty() {
		s.SetLinuxCPUSetCPUs(cpus.String())
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
