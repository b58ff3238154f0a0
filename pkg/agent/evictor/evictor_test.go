package evictor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/events"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const (
	nodeName = "ev-node"
	reason   = "MemoryPressure"
)

var start = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is an Evictor against the real API server, with a fake clock, a cgroup v2 fixture tree to kill in, and a
// switch that makes the API server unreachable for it.
type fixture struct {
	t   *testing.T
	env *testenv.Env
	e   *Evictor
	w   *events.Writer
	clk *clocktesting.FakeClock
	ns  string
	// cgroups is the cgroup v2 root KillLocally writes cgroup.kill under.
	cgroups string
	// evictions counts the eviction requests that reached the API server.
	evictions atomic.Int32
	// down makes evictions and event writes fail as if the API server could not be reached; refusedCreates counts
	// the creates (events) it failed.
	down           atomic.Bool
	refusedCreates atomic.Int32
	// hold, when set before a request, keeps eviction requests waiting until it is closed.
	hold chan struct{}
}

var namespaces atomic.Int32

func newFixture(t *testing.T, configure func(*Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, env: env.Start(t), clk: clocktesting.NewFakeClock(start), cgroups: t.TempDir()}
	ctx := context.Background()
	f.ns = fmt.Sprintf("evictor-%d", namespaces.Add(1))
	if err := f.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	for _, pc := range testutil.PriorityClasses() {
		if err := f.env.Client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	unreachable := func() error {
		return &url.Error{Op: "Post", URL: "https://apiserver:6443", Err: syscall.ECONNREFUSED}
	}
	ww, err := client.NewWithWatch(f.env.Config, client.Options{Scheme: f.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if f.down.Load() {
				return unreachable()
			}
			if sub == "eviction" {
				f.evictions.Add(1)
				if f.hold != nil {
					<-f.hold
				}
			}
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if f.down.Load() {
				f.refusedCreates.Add(1)
				return unreachable()
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
	opts := DefaultOptions()
	opts.NodeName = nodeName
	if configure != nil {
		configure(&opts)
	}
	f.w = events.New(c, f.clk, opts.NodeName)
	f.e, err = New(c, cgroup.NewFS(f.cgroups, cgroup.V2), f.w, f.clk, prometheus.NewRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pod creates a running pod on the node, Ready, with the given builder changes.
func (f *fixture) pod(name string, build func(*testutil.PodBuilder)) *corev1.Pod {
	f.t.Helper()
	b := testutil.Pod(name).Namespace(f.ns).Node(nodeName).Container("c")
	if build != nil {
		build(b)
	}
	p := f.env.CreatePod(f.t, b.Obj())
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if err := f.env.Client.Status().Update(context.Background(), p); err != nil {
		f.t.Fatalf("making pod %s ready: %v", name, err)
	}
	return p
}

// bePod creates a best-effort pod (QoS class BE by label).
func (f *fixture) bePod(name string) *corev1.Pod {
	return f.pod(name, func(b *testutil.PodBuilder) { b.Label(slov1alpha1.LabelQoSClass, "BE") })
}

// get reads pod back from the API server; nil when it is gone.
func (f *fixture) get(pod *corev1.Pod) *corev1.Pod {
	f.t.Helper()
	got := &corev1.Pod{}
	if err := f.env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return got
}

// expectEvicted checks that the API server is deleting pod (envtest has no kubelet to finish the deletion).
func (f *fixture) expectEvicted(pod *corev1.Pod) {
	f.t.Helper()
	if got := f.get(pod); got != nil && got.DeletionTimestamp == nil {
		f.t.Errorf("pod %s is not being deleted", pod.Name)
	}
}

// expectUntouched checks that pod exists and is not being deleted.
func (f *fixture) expectUntouched(pod *corev1.Pod) {
	f.t.Helper()
	got := f.get(pod)
	if got == nil || got.DeletionTimestamp != nil {
		f.t.Errorf("pod %s was evicted: %v", pod.Name, got)
	}
}

// events returns the reasons of the events on pod.
func (f *fixture) events(pod *corev1.Pod) []corev1.Event {
	f.t.Helper()
	list := &corev1.EventList{}
	if err := f.env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingFields{"involvedObject.uid": string(pod.UID)}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// expectEvents checks the reasons of pod's events, in any order, and that every one is a Warning from the agent.
func (f *fixture) expectEvents(pod *corev1.Pod, reasons ...string) []corev1.Event {
	f.t.Helper()
	evs := f.events(pod)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Reason)
		if ev.Type != corev1.EventTypeWarning || ev.Source.Component != events.Component || ev.Source.Host != nodeName {
			f.t.Errorf("event %s: type %s, source %+v", ev.Name, ev.Type, ev.Source)
		}
	}
	if strings.Join(got, ",") != strings.Join(reasons, ",") {
		f.t.Errorf("events on pod %s: %v, want %v", pod.Name, got, reasons)
	}
	return evs
}

// counted is gleaner_agent_evictions_total for action and result with the test's reason.
func (f *fixture) counted(action string, result string) float64 {
	return promtestutil.ToFloat64(f.e.evictions.WithLabelValues(action, reason, result))
}

func (f *fixture) evict(pod *corev1.Pod, want Result) {
	f.t.Helper()
	got, err := f.e.Evict(context.Background(), pod, reason, "node memory 91% > threshold 70%")
	if err != nil || got != want {
		f.t.Fatalf("Evict(%s) = %q, %v; want %q", pod.Name, got, err, want)
	}
}

// TestEvictBestEffort evicts a best-effort pod (and a mid-tier one) through the Eviction API, once: the pod is
// deleted, a Warning event names the numbers, the counter moves, and asking again (the same object, or the
// terminating one) sends nothing.
func TestEvictBestEffort(t *testing.T) {
	f := newFixture(t, nil)
	byLabel := f.bePod("by-label")
	byPriority := f.pod("by-priority", func(b *testutil.PodBuilder) { b.PriorityClass("gleaner-batch") })
	mid := f.pod("mid", func(b *testutil.PodBuilder) { b.PriorityClass("gleaner-mid") })

	f.evict(byLabel, Evicted)
	f.evict(byPriority, Evicted)
	f.evict(mid, Evicted)
	f.expectEvicted(byLabel)
	f.expectEvicted(byPriority)
	f.expectEvicted(mid)
	evs := f.expectEvents(byLabel, "Evicted")
	if msg := evs[0].Message; !strings.Contains(msg, "node memory 91% > threshold 70%") || !strings.Contains(msg, reason) {
		t.Errorf("event message %q does not name the reason and the numbers", msg)
	}
	if got := f.counted(actionEvict, string(Evicted)); got != 3 {
		t.Errorf("evicted counter = %v, want 3", got)
	}

	// Asked again before the pod is gone: nothing is sent, by memory and by the pod's deletionTimestamp.
	f.evict(byLabel, InProgress)
	f.evict(f.get(byPriority), InProgress)
	if n := f.evictions.Load(); n != 3 {
		t.Errorf("%d eviction requests, want 3", n)
	}
	f.expectEvents(byLabel, "Evicted")

	// Forgotten once gone (Prune); a pod that is still there may then be asked for again.
	f.e.Prune(func(types.UID) bool { return false })
	if n := len(f.e.pods); n != 0 {
		t.Errorf("%d pods remembered after Prune", n)
	}
	f.evict(byLabel, Evicted)
}

// TestEvictConcurrent: a pod asked for by two plugins at once is evicted once.
func TestEvictConcurrent(t *testing.T) {
	f := newFixture(t, nil)
	pod := f.bePod("wanted")
	f.hold = make(chan struct{})
	first := make(chan Result)
	go func() {
		res, err := f.e.Evict(context.Background(), pod, reason, "x")
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	for f.evictions.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	f.evict(pod, InProgress) // while the first request is on its way
	close(f.hold)
	if res := <-first; res != Evicted {
		t.Errorf("first Evict = %q, want evicted", res)
	}
	if n := f.evictions.Load(); n != 1 {
		t.Errorf("%d eviction requests, want 1", n)
	}
}

// TestEvictRefusesOthers never evicts a pod that is neither best-effort nor mid-tier: an error, no request, no
// event, the pod stays.
func TestEvictRefusesOthers(t *testing.T) {
	f := newFixture(t, nil)
	pods := []*corev1.Pod{
		f.pod("ls", func(b *testutil.PodBuilder) { b.Label(slov1alpha1.LabelQoSClass, "LS") }),
		f.pod("prod", func(b *testutil.PodBuilder) { b.PriorityClass("gleaner-prod") }),
		// No label, no priority, burstable: LS, so prod. (A plain BestEffort pod would be BE: slov1alpha1.ClassOf.)
		f.pod("plain", func(b *testutil.PodBuilder) { b.Requests("cpu", "100m") }),
	}
	for _, p := range pods {
		if res, err := f.e.Evict(context.Background(), p, reason, "x"); !errors.Is(err, ErrProtected) || res != "" {
			t.Errorf("Evict(%s) = %q, %v; want ErrProtected", p.Name, res, err)
		}
		if res, err := f.e.KillLocally(context.Background(), p, "kubepods/pod"+string(p.UID), reason, "x"); !errors.Is(err, ErrProtected) || res != "" {
			t.Errorf("KillLocally(%s) = %q, %v; want ErrProtected", p.Name, res, err)
		}
		f.expectUntouched(p)
		f.expectEvents(p)
	}
	if n := f.evictions.Load(); n != 0 {
		t.Errorf("%d eviction requests for protected pods", n)
	}
	if got := f.counted(actionEvict, resultProtected); got != 3 {
		t.Errorf("protected counter = %v, want 3", got)
	}
}

// TestEvictPodDisruptionBudget: a pod whose PodDisruptionBudget allows no disruption is refused (429) and stays; it
// is not asked for again before RetryAfter, is asked again after it, and is evicted once the budget allows. A refused
// request does not spend the rate limit.
func TestEvictPodDisruptionBudget(t *testing.T) {
	// One eviction an hour: the final eviction only happens if the refusals gave their token back.
	f := newFixture(t, func(o *Options) { o.Burst, o.RatePerMinute = 1, 1.0/60 })
	ctx := context.Background()
	pod := f.pod("guarded", func(b *testutil.PodBuilder) {
		b.Label(slov1alpha1.LabelQoSClass, "BE").Label("app", "guarded")
	})
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: f.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
		},
	}
	if err := f.env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// envtest runs no disruption controller: write the status it would, as the eviction handler reads it.
	setAllowed := func(n int32) {
		t.Helper()
		pdb.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: pdb.Generation, DisruptionsAllowed: n,
			CurrentHealthy: 1, DesiredHealthy: 1 - n, ExpectedPods: 1,
		}
		if err := f.env.Client.Status().Update(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	setAllowed(0)

	f.evict(pod, Refused)
	f.expectUntouched(pod)
	evs := f.expectEvents(pod, "EvictionRefused")
	if !strings.Contains(evs[0].Message, "guard needs 1 healthy pods") {
		t.Errorf("the refusal event does not say why: %q", evs[0].Message)
	}

	f.clk.Step(f.e.opts.RetryAfter - time.Second)
	f.evict(pod, Waiting)
	if n := f.evictions.Load(); n != 1 {
		t.Fatalf("%d eviction requests before RetryAfter passed, want 1", n)
	}

	f.clk.Step(time.Second)
	f.evict(pod, Refused)
	if n := f.evictions.Load(); n != 2 {
		t.Fatalf("%d eviction requests after RetryAfter, want 2", n)
	}
	f.expectUntouched(pod)
	f.expectEvents(pod, "EvictionRefused") // a refusal is reported once, counted each time
	if got := f.counted(actionEvict, string(Refused)); got != 2 {
		t.Errorf("refused counter = %v, want 2", got)
	}

	setAllowed(1)
	f.clk.Step(f.e.opts.RetryAfter)
	f.evict(pod, Evicted)
	f.expectEvicted(pod)
}

// TestEvictRateLimit: with a burst of 2 and 1 a minute, the third eviction in a row is deferred without a request,
// and goes through once a minute has passed.
func TestEvictRateLimit(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Burst, o.RatePerMinute = 2, 1 })
	a, b, c := f.bePod("a"), f.bePod("b"), f.bePod("c")
	f.evict(a, Evicted)
	f.evict(b, Evicted)
	f.evict(c, RateLimited)
	f.expectUntouched(c)
	f.clk.Step(59 * time.Second)
	f.evict(c, RateLimited)
	if n := f.evictions.Load(); n != 2 {
		t.Errorf("%d eviction requests, want 2", n)
	}
	if got := f.counted(actionEvict, string(RateLimited)); got != 2 {
		t.Errorf("rate_limited counter = %v, want 2", got)
	}
	f.clk.Step(time.Second)
	f.evict(c, Evicted)
	f.expectEvicted(c)
	// A minute later again: one token, not two (the bucket does not hold more than it gains).
	f.clk.Step(time.Minute)
	d, g := f.bePod("d"), f.bePod("g")
	f.evict(d, Evicted)
	f.evict(g, RateLimited)
}

// TestEvictDryRun reports without evicting: an event, the dry_run counter, the rate limit spent; the pod stays, and is
// reported again only after RetryAfter.
func TestEvictDryRun(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.DryRun, o.Burst = true, 1 })
	pod, other := f.bePod("dry"), f.bePod("other")
	f.evict(pod, DryRun)
	f.evict(other, RateLimited)
	f.evict(pod, InProgress)
	f.expectUntouched(pod)
	evs := f.expectEvents(pod, "WouldEvict")
	if !strings.HasPrefix(evs[0].Message, "Dry run:") {
		t.Errorf("dry-run event message %q", evs[0].Message)
	}
	if n := f.evictions.Load(); n != 0 {
		t.Errorf("%d eviction requests in a dry run", n)
	}
	if got := f.counted(actionEvict, string(DryRun)); got != 1 {
		t.Errorf("dry_run counter = %v, want 1", got)
	}
	f.clk.Step(f.e.opts.RetryAfter)
	f.evict(pod, DryRun)
	f.expectEvents(pod, "WouldEvict", "WouldEvict")
	f.expectUntouched(pod)
}

// TestEvictGone: a pod that no longer exists, or was replaced by another of the same name, is Gone, and the new pod
// is not touched.
func TestEvictGone(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	old := f.bePod("replaced")
	stale := old.DeepCopy()
	if err := f.env.Client.Delete(ctx, old, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.evict(stale, Gone)

	replacement := f.bePod("replaced")
	if replacement.UID == stale.UID {
		t.Fatal("the replacement has the old UID")
	}
	f.evict(stale, Gone)
	f.expectUntouched(replacement)
	if got := f.counted(actionEvict, string(Gone)); got != 2 {
		t.Errorf("gone counter = %v, want 2", got)
	}
	// Rate limit tokens went back: the default burst is still whole.
	if tokens := f.e.bucket.tokens; tokens != float64(f.e.opts.Burst) {
		t.Errorf("%v tokens left, want %d", tokens, f.e.opts.Burst)
	}
}

// TestEvictUnreachable: when the API server cannot be reached, Evict says so (ErrUnreachable), keeps nothing in
// flight, and the next call asks again.
func TestEvictUnreachable(t *testing.T) {
	f := newFixture(t, nil)
	pod := f.bePod("far")
	f.down.Store(true)
	res, err := f.e.Evict(context.Background(), pod, reason, "x")
	if !errors.Is(err, ErrUnreachable) || res != "" {
		t.Fatalf("Evict with the API server away = %q, %v; want ErrUnreachable", res, err)
	}
	if got := f.counted(actionEvict, resultError); got != 1 {
		t.Errorf("error counter = %v, want 1", got)
	}
	f.down.Store(false)
	f.evict(pod, Evicted)

	// An answer from the server is not "unreachable".
	if unreachable(apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("no"))) {
		t.Error("a 403 counted as unreachable")
	}
	if !unreachable(apierrors.NewServiceUnavailable("down")) || unreachable(context.Canceled) {
		t.Error("503 must be unreachable, a cancelled context not")
	}
}

// stepUntilRefused steps the clock by d and waits until the API server, away, has refused one more create: the
// event writer's retry that the step woke in its own goroutine.
func (f *fixture) stepUntilRefused(d time.Duration) {
	f.t.Helper()
	refused := f.refusedCreates.Load()
	f.clk.Step(d)
	for deadline := time.Now().Add(10 * time.Second); f.refusedCreates.Load() == refused; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatal("the event writer did not retry while the API server was away")
		}
	}
}

// TestKillLocally kills a best-effort pod's cgroup while the API server is away, not twice within RetryAfter, and
// reports it with a Warning event once the API server is back (through Start).
func TestKillLocally(t *testing.T) {
	f := newFixture(t, nil)
	pod := f.bePod("hog")
	dir := "kubepods/besteffort/pod" + string(pod.UID)
	killFile := filepath.Join(f.cgroups, dir, "cgroup.kill")
	if err := os.MkdirAll(filepath.Dir(killFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- f.w.Start(ctx) }()

	f.down.Store(true)
	killedAt := f.clk.Now()
	if res, err := f.e.KillLocally(ctx, pod, dir, reason, "node memory 97% > threshold 70%"); err != nil || res != Killed {
		t.Fatalf("KillLocally = %q, %v", res, err)
	}
	if b, _ := os.ReadFile(killFile); string(b) != "1" {
		t.Fatalf("cgroup.kill = %q, want 1", b)
	}
	if err := os.WriteFile(killFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.clk.Step(time.Second)
	if res, err := f.e.KillLocally(ctx, pod, dir, reason, "x"); err != nil || res != InProgress {
		t.Errorf("second KillLocally = %q, %v; want InProgress", res, err)
	}
	if b, _ := os.ReadFile(killFile); len(b) != 0 {
		t.Errorf("killed twice within RetryAfter")
	}

	// The API server is still away at the first retry, and back at the second. The writer's retry runs in its own
	// goroutine: the API server comes back only once that retry has been refused.
	for !f.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	f.stepUntilRefused(events.RetryInterval)
	f.down.Store(false)
	f.expectEvents(pod)
	f.clk.Step(events.RetryInterval)
	for deadline := time.Now().Add(10 * time.Second); f.w.Pending() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the kill was not reported once the API server was back")
		}
	}
	evs := f.expectEvents(pod, "KilledLocally")
	if !evs[0].FirstTimestamp.Time.Equal(killedAt) || !strings.Contains(evs[0].Message, "node memory 97% > threshold 70%") {
		t.Errorf("event at %v with %q; want the time of the kill and the numbers", evs[0].FirstTimestamp, evs[0].Message)
	}
	if got := f.counted(actionKill, string(Killed)); got != 1 {
		t.Errorf("killed counter = %v, want 1", got)
	}

	// A pod whose cgroup is gone.
	if res, err := f.e.KillLocally(ctx, f.bePod("gone"), "kubepods/besteffort/podgone", reason, "x"); err != nil || res != Gone {
		t.Errorf("KillLocally of a gone cgroup = %q, %v; want Gone", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}

// TestKillLocallySwitchedOffAndDryRun: LocalKill off kills nothing; a dry run reports without killing.
func TestKillLocallySwitchedOffAndDryRun(t *testing.T) {
	for _, tt := range []struct {
		name      string
		configure func(*Options)
		want      Result
		event     []string
	}{
		{"switched off", func(o *Options) { o.LocalKill = false }, Disabled, nil},
		{"dry run", func(o *Options) { o.DryRun = true }, DryRun, []string{"WouldKillLocally"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.configure)
			pod := f.bePod("hog")
			dir := "kubepods/besteffort/pod" + string(pod.UID)
			killFile := filepath.Join(f.cgroups, dir, "cgroup.kill")
			if err := os.MkdirAll(filepath.Dir(killFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(killFile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if res, err := f.e.KillLocally(context.Background(), pod, dir, reason, "x"); err != nil || res != tt.want {
				t.Fatalf("KillLocally = %q, %v; want %q", res, err, tt.want)
			}
			if b, _ := os.ReadFile(killFile); len(b) != 0 {
				t.Errorf("cgroup.kill written: %q", b)
			}
			if err := f.w.ReportPending(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.expectEvents(pod, tt.event...)
			if got := f.counted(actionKill, string(tt.want)); got != 1 {
				t.Errorf("%s counter = %v, want 1", tt.want, got)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := DefaultOptions()
	valid.NodeName = "n"
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no node", func(o *Options) { o.NodeName = "" }, "node name"},
		{"zero rate", func(o *Options) { o.RatePerMinute = 0 }, "rate must be above 0"},
		{"NaN rate", func(o *Options) { o.RatePerMinute = math.NaN() }, "rate must be above 0"},
		{"zero burst", func(o *Options) { o.Burst = 0 }, "burst must be at least 1"},
		{"negative retry", func(o *Options) { o.RetryAfter = -time.Second }, "retry delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.change(&o)
			_, err := New(nil, nil, nil, clocktesting.NewFakeClock(start), prometheus.NewRegistry(), o)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	reg := prometheus.NewRegistry()
	if _, err := New(nil, nil, nil, clocktesting.NewFakeClock(start), reg, valid); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil, nil, nil, clocktesting.NewFakeClock(start), reg, valid); err == nil {
		t.Error("a second Evictor registered its counter in the same registry")
	}
}

// TestUnreachable: only an API server that does not answer sends the memory plugin to the local last resort; an
// answer (a refusal, an error) or a request the client could not even build never does.
func TestUnreachable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &url.Error{Op: "Post", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true},
		{"deadline", fmt.Errorf("posting: %w", context.DeadlineExceeded), true},
		{"connection reset", fmt.Errorf("reading: %w", syscall.ECONNRESET), true},
		{"EOF", fmt.Errorf("reading: %w", io.EOF), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"cancelled", context.Canceled, false},
		{"429", apierrors.NewTooManyRequests("budget", 1), false},
		{"403", apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{"500", apierrors.NewInternalError(errors.New("boom")), false},
		{"a client that cannot encode the request", errors.New(`no kind is registered for the type v1.Eviction in scheme "pkg/runtime/scheme.go:110"`), false},
	}
	for _, tt := range tests {
		if got := unreachable(tt.err); got != tt.want {
			t.Errorf("%s: unreachable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
