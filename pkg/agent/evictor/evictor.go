package evictor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/events"
)

// The agent asks the API server to evict pods and reports what it did on them.
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=events,verbs=create

// Options configure an Evictor. DefaultOptions holds the defaults; Validate says what is wrong with bad values.
type Options struct {
	// NodeName is the node whose pods are evicted, named in events and logs.
	NodeName string
	// DryRun only reports: each eviction or local kill is logged, recorded as an event (reason WouldEvict,
	// WouldKillLocally) and counted with result "dry_run", and nothing is evicted or killed. The rate limit and the
	// once-per-pod rule apply as they would, so a dry run shows what a real run would do; a pod reported in a dry
	// run is reported again after RetryAfter if it is asked for again.
	DryRun bool
	// RatePerMinute is how many pods per minute this node may evict (and kill locally) once Burst is spent.
	RatePerMinute float64
	// Burst is how many pods may be evicted at once when none was for a while.
	Burst int
	// RetryAfter is how long a pod whose eviction was refused (HTTP 429, a PodDisruptionBudget allowing no
	// disruption) waits before it is asked for again; longer when the API server asks for longer. It is also how
	// long a pod killed locally is not killed again.
	RetryAfter time.Duration
	// LocalKill allows KillLocally, the last resort while the API server cannot be reached.
	LocalKill bool
}

// DefaultOptions returns the defaults:
//   - Burst 10: one memory-eviction round may need several pods at once, as Koordinator's koordlet, which evicts
//     a whole round together, does; 10 covers the best-effort pods of a typical node.
//   - RatePerMinute 10: after the burst one pod every 6 s, still faster than Koordinator's 20 s CPU-eviction cool
//     down; sustained evictions beyond that mean something is wrong (a bad NodeSLO, usage accounting), and the
//     limit keeps such a fault from emptying the node at once.
//   - RetryAfter 30 s: a PodDisruptionBudget changes as pods restart and become ready, on the scale of tens of
//     seconds; the plugins meanwhile pick the next candidate.
//   - LocalKill on: without it a node whose API server is away has only the kernel's OOM killer, which may pick a
//     service.
func DefaultOptions() Options {
	return Options{RatePerMinute: 10, Burst: 10, RetryAfter: 30 * time.Second, LocalKill: true}
}

// Validate reports the first bad value.
func (o Options) Validate() error {
	switch {
	case o.NodeName == "":
		return errors.New("the evictor needs the node name")
	case !(o.RatePerMinute > 0):
		return fmt.Errorf("the eviction rate must be above 0 per minute, got %v", o.RatePerMinute)
	case o.Burst < 1:
		return fmt.Errorf("the eviction burst must be at least 1, got %d", o.Burst)
	case o.RetryAfter <= 0:
		return fmt.Errorf("the retry delay after a refused eviction must be above 0, got %s", o.RetryAfter)
	}
	return nil
}

// Result is what Evict or KillLocally did with a pod.
type Result string

// The results. Those that are counted are also the result label of gleaner_agent_evictions_total.
const (
	// Evicted: the API server accepted the eviction; the pod terminates with its grace period.
	Evicted Result = "evicted"
	// Killed: KillLocally killed the pod's processes.
	Killed Result = "killed"
	// DryRun: the pod would have been evicted or killed; nothing was done.
	DryRun Result = "dry_run"
	// Refused: the API server refused the eviction with HTTP 429 (a PodDisruptionBudget allows no disruption now);
	// the pod is not asked for again before Options.RetryAfter.
	Refused Result = "refused"
	// RateLimited: the node's eviction budget is spent; nothing was asked. Try again later.
	RateLimited Result = "rate_limited"
	// Gone: the pod no longer exists (or was replaced by one of the same name); nothing to do.
	Gone Result = "gone"
	// InProgress: the pod was evicted (or killed, or reported in a dry run) before and is not gone yet, or is
	// terminating already; nothing was asked. Not counted.
	InProgress Result = "in_progress"
	// Waiting: the pod's eviction was refused less than Options.RetryAfter ago; nothing was asked. Not counted.
	Waiting Result = "waiting"
	// Disabled: KillLocally is switched off (Options.LocalKill); nothing was done.
	Disabled Result = "disabled"
)

// Releasing reports whether the pod's resources can be counted as on their way out: it was evicted or killed now
// or before, or would have been in a dry run (so a dry run makes the choices a real run would).
func (r Result) Releasing() bool {
	return r == Evicted || r == Killed || r == DryRun || r == InProgress
}

// Counter results that are not a Result: the call itself failed.
const (
	resultError     = "error"
	resultProtected = "protected"
)

// The action label of gleaner_agent_evictions_total.
const (
	actionEvict = "evict"
	actionKill  = "kill"
)

var (
	// ErrProtected is returned for a pod the Evictor may not touch: neither best-effort nor mid-tier (see
	// slov1alpha1.PodClass.Evictable).
	ErrProtected = errors.New("the pod is neither best-effort nor mid-tier")
	// ErrUnreachable is wrapped by Evict's error when the API server did not answer, or answered that it cannot
	// serve (503, timeouts): the condition under which KillLocally is the last resort.
	ErrUnreachable = errors.New("the API server cannot be reached")
)

// Killer kills the processes of a cgroup and its descendants; *cgroup.FS is one (see its Kill). dir is a cgroup
// path relative to the hierarchy root, as the agent's cgroup Layout gives it; a cgroup that does not exist is an
// error wrapping fs.ErrNotExist.
type Killer interface {
	Kill(dir string) error
}

// Evictor evicts best-effort pods of one node through the Eviction API. It is safe for concurrent use by several
// plugins: a pod asked for by two at once is evicted once.
type Evictor struct {
	client client.Client
	killer Killer
	clock  clock.PassiveClock
	opts   Options

	evictions *prometheus.CounterVec

	events *events.Writer

	mu     sync.Mutex
	bucket *bucket
	pods   map[types.UID]*podState
}

// podState is what the Evictor remembers of a pod until Prune forgets it.
type podState struct {
	evict evictState
	// until is when a refused pod may be asked for again, or a pod reported in a dry run reported again.
	until time.Time
	// refusalReported is set once a refusal was recorded as an event: the next ones only count.
	refusalReported bool
	// killedAt is when KillLocally last killed (or in a dry run would have killed) the pod.
	killedAt time.Time
}

type evictState int

const (
	evictNone evictState = iota
	// evictRequested: a request is on its way; a second caller must not send another.
	evictRequested
	evictAccepted
	evictRefused
	evictDryRun
)

// New returns an Evictor for the pods of opts.NodeName. c writes evictions; killer kills a pod's cgroup for
// KillLocally; w writes the events; clk times the rate limit, the retry delays and the event timestamps; the counter
// gleaner_agent_evictions_total is registered in reg.
func New(c client.Client, killer Killer, w *events.Writer, clk clock.PassiveClock, reg prometheus.Registerer, opts Options) (*Evictor, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the evictor: %w", err)
	}
	e := &Evictor{
		client: c, killer: killer, events: w, clock: clk, opts: opts,
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_evictions_total",
			Help: "Evictions (action evict) and local kills (action kill) of best-effort pods by the plugin's reason and result: " +
				"evicted, killed, dry_run, refused (HTTP 429, a PodDisruptionBudget), rate_limited, gone, disabled, protected (neither best-effort nor mid-tier: refused, a bug in the caller), error.",
		}, []string{"action", "reason", "result"}),
		bucket: newBucket(opts.RatePerMinute/60, opts.Burst, clk.Now()),
		pods:   map[types.UID]*podState{},
	}
	if err := reg.Register(e.evictions); err != nil {
		return nil, fmt.Errorf("registering the eviction metrics: %w", err)
	}
	return e, nil
}

// Evict asks the API server to evict pod for reason, a short fixed word naming the cause that is also a metric label
// (the plugins use "MemoryPressure", "CPUSatisfaction"), with message naming the numbers that led to the decision
// (it goes into the log and the event).
//
// Only best-effort and mid-tier pods are evicted: any other pod is an error wrapping ErrProtected and nothing is done. A pod
// whose eviction was accepted and that is not gone yet, or that is terminating (deletionTimestamp set), is not
// evicted again (InProgress); a pod refused less than RetryAfter ago is not asked for again (Waiting); when the
// node's rate limit is spent nothing is asked (RateLimited). A refusal by a PodDisruptionBudget is Refused with a nil
// error: the pod stays, and may be asked for again after RetryAfter. Any other failure is an error, wrapping
// ErrUnreachable when the API server did not answer.
func (e *Evictor) Evict(ctx context.Context, pod *corev1.Pod, reason, message string) (Result, error) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "reason", reason)
	if !slov1alpha1.ClassOf(pod).Evictable() {
		e.count(actionEvict, reason, resultProtected)
		return "", fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, ErrProtected)
	}
	now := e.clock.Now()
	e.mu.Lock()
	st := e.state(pod.UID)
	switch {
	case pod.DeletionTimestamp != nil, st.evict == evictRequested, st.evict == evictAccepted,
		st.evict == evictDryRun && now.Before(st.until):
		e.mu.Unlock()
		return InProgress, nil
	case st.evict == evictRefused && now.Before(st.until):
		e.mu.Unlock()
		return Waiting, nil
	}
	if !e.bucket.take(now) {
		next := e.bucket.next(now)
		e.mu.Unlock()
		log.V(1).Info("eviction deferred by the node's rate limit", "nextIn", next, "message", message)
		e.count(actionEvict, reason, string(RateLimited))
		return RateLimited, nil
	}
	if e.opts.DryRun {
		st.evict, st.until = evictDryRun, now.Add(e.opts.RetryAfter)
		e.mu.Unlock()
		log.Info("dry run: would evict pod", "message", message)
		e.count(actionEvict, reason, string(DryRun))
		e.record(ctx, pod, now, "WouldEvict", "Evict",
			fmt.Sprintf("Dry run: gleaner-agent on node %s would evict this pod (%s): %s", e.opts.NodeName, reason, message), true)
		return DryRun, nil
	}
	st.evict = evictRequested
	e.mu.Unlock()

	err := e.client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		// The pod asked for, not one created since under the same name (a StatefulSet's).
		DeleteOptions: &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))},
	})
	return e.evicted(ctx, pod, reason, message, err)
}

// evicted records the outcome of an eviction request.
func (e *Evictor) evicted(ctx context.Context, pod *corev1.Pod, reason, message string, err error) (Result, error) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "reason", reason)
	now := e.clock.Now()
	e.mu.Lock()
	st := e.state(pod.UID)
	if err == nil {
		st.evict = evictAccepted
		e.mu.Unlock()
		log.Info("evicted pod", "message", message)
		e.count(actionEvict, reason, string(Evicted))
		e.record(ctx, pod, now, "Evicted", "Evict",
			fmt.Sprintf("gleaner-agent on node %s evicted this pod (%s): %s", e.opts.NodeName, reason, message), true)
		return Evicted, nil
	}
	// Nothing was disrupted: the request's token goes back.
	e.bucket.giveBack(now)
	switch {
	case apierrors.IsTooManyRequests(err):
		wait := e.opts.RetryAfter
		if s, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(s)*time.Second > wait {
			wait = time.Duration(s) * time.Second
		}
		first := !st.refusalReported
		st.evict, st.until, st.refusalReported = evictRefused, now.Add(wait), true
		e.mu.Unlock()
		why := refusal(err)
		log.Info("eviction refused, will retry", "retryAfter", wait, "why", why, "message", message)
		e.count(actionEvict, reason, string(Refused))
		if first {
			e.record(ctx, pod, now, "EvictionRefused", "Evict",
				fmt.Sprintf("gleaner-agent on node %s asked to evict this pod (%s) and was refused: %s; it asks again after %s while the cause lasts: %s",
					e.opts.NodeName, reason, why, wait, message), true)
		}
		return Refused, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Conflict: the UID precondition failed, the pod was replaced by another of the same name.
		delete(e.pods, pod.UID)
		e.mu.Unlock()
		log.V(1).Info("pod to evict is gone", "error", err)
		e.count(actionEvict, reason, string(Gone))
		return Gone, nil
	}
	st.evict = evictNone
	e.mu.Unlock()
	e.count(actionEvict, reason, resultError)
	if unreachable(err) {
		return "", fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, ErrUnreachable, err)
	}
	return "", fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// Prune forgets the pods for which exists is false, so the memory of evicted pods does not grow. The agent calls it
// with its current pods (for example on every plugin round): a pod forgotten while it still exists may be evicted
// again.
func (e *Evictor) Prune(exists func(types.UID) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for uid := range e.pods {
		if !exists(uid) {
			delete(e.pods, uid)
		}
	}
}

// state returns the pod's state, creating it. Callers hold mu.
func (e *Evictor) state(uid types.UID) *podState {
	st, ok := e.pods[uid]
	if !ok {
		st = &podState{}
		e.pods[uid] = st
	}
	return st
}

func (e *Evictor) count(action, reason, result string) {
	e.evictions.WithLabelValues(action, reason, result).Inc()
}

// refusal is the API server's reason for a 429: the PodDisruptionBudget's cause when it gave one.
func refusal(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					return c.Message
				}
			}
		}
	}
	return err.Error()
}

// unreachable reports whether err means the API server could not be asked: no answer at all, or one saying it
// cannot serve.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the agent is stopping
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	// Only a failure to talk to the API server at all counts: a request that never got an answer. Any other error
	// (a client that cannot encode the request, say) is a bug to report, never a reason to kill processes.
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// record writes a Warning event on pod, or keeps it for the event writer to write later (events.Writer.Record).
func (e *Evictor) record(ctx context.Context, pod *corev1.Pod, at time.Time, reason, action, message string, writeNow bool) {
	e.events.Record(ctx, events.PodRef(pod), corev1.EventTypeWarning, at, reason, action, message, writeNow)
}
