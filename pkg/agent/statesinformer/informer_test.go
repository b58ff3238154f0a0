package statesinformer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// start runs an informer for node against cfg until the test ends and waits for it to sync.
func start(t *testing.T, cfg *rest.Config, node string) *Informer {
	t.Helper()
	e := env.Start(t)
	inf, err := New(cfg, e.Scheme, node, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("informer stopped with %v", err)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !inf.WaitForSync(syncCtx) {
		t.Fatal("informer did not sync within 30s")
	}
	if !inf.HasSynced() {
		t.Fatal("WaitForSync returned but HasSynced is false")
	}
	return inf
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: still failing after 30s: %v", what, err)
}

func podNames(s States) []string {
	var n []string
	for _, p := range s.GetAllPods() {
		n = append(n, p.Pod.Name)
	}
	return n
}

func wantPods(s States, want ...string) func() error {
	return func() error {
		if d := cmp.Diff(want, podNames(s)); d != "" {
			return fmt.Errorf("pods (-want +got):\n%s", d)
		}
		return nil
	}
}

// TestInformerFollowsItsNode: the informer sees exactly its node's objects, and their changes, through getters
// and callbacks.
func TestInformerFollowsItsNode(t *testing.T) {
	e := env.Start(t)
	create(t, e.Client,
		testutil.Node("inf-a").Obj(), testutil.Node("inf-b").Obj(),
		testutil.PriorityClasses()[0],
		testutil.Pod("a1").Node("inf-a").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").Container("c").Obj(),
		testutil.Pod("a2").Node("inf-a").Container("c").Obj(),
		testutil.Pod("b1").Node("inf-b").Container("c").Obj(),
		testutil.Pod("unbound").Container("c").Obj(),
		&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "inf-a"}},
		&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "inf-b"}},
		&slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "inf-a"}},
	)
	inf := start(t, e.Config, "inf-a")
	rec := &recorder{}
	for _, k := range Kinds() {
		inf.RegisterCallback(k, "test", rec.fn("test"))
	}

	expectNodeObjects(t, inf, "inf-a")
	eventually(t, "the node's pods", wantPods(inf, "a1", "a2"))
	a1 := inf.GetAllPods()[0]
	if a1.QoS != slov1alpha1.QoSLS || a1.Priority != slov1alpha1.PriorityProd || len(a1.Pod.ManagedFields) != 0 {
		t.Errorf("a1: QoS %s, priority %s, %d managed fields; want LS, prod, none (stripped)", a1.QoS, a1.Priority, len(a1.Pod.ManagedFields))
	}
	rec.settle(t)
	changePods(t, e.Client, inf, rec)
	changeNodeSLOAndMetric(t, e.Client, inf, rec)
}

func expectNodeObjects(t *testing.T, inf *Informer, node string) {
	t.Helper()
	if n := inf.GetNode(); n == nil || n.Name != node {
		t.Fatalf("GetNode = %v", n)
	}
	if s := inf.GetNodeSLO(); s == nil || s.Name != node {
		t.Fatalf("GetNodeSLO = %v", s)
	}
	if m := inf.GetNodeMetric(); m == nil || m.Name != node {
		t.Fatalf("GetNodeMetric = %v", m)
	}
}

func changePods(t *testing.T, c client.Client, inf *Informer, rec *recorder) {
	ctx := context.Background()
	// A pod that succeeds is dropped; a deleted one too; a new one appears.
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a2"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a succeeded pod is dropped", wantPods(inf, "a1"))
	create(t, c, testutil.Pod("a3").Node("inf-a").Container("c").Obj())
	if err := c.Delete(ctx, testutil.Pod("a1").Obj(), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted pod is dropped, a new one added", wantPods(inf, "a3"))
	if c := rec.settle(t); !slices.Contains(c, "test:Pods") {
		t.Errorf("no Pods callback for pod changes, got %v", c)
	}
}

func changeNodeSLOAndMetric(t *testing.T, c client.Client, inf *Informer, rec *recorder) {
	ctx := context.Background()

	// A NodeSLO spec change reaches the getter and the callbacks; the other node's does not.
	for _, name := range []string{"inf-a", "inf-b"} {
		slo := &slov1alpha1.NodeSLO{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, slo); err != nil {
			t.Fatal(err)
		}
		slo.Spec.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(name == "inf-a")}
		if err := c.Update(ctx, slo); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the NodeSLO change", func() error {
		s := inf.GetNodeSLO().Spec.ResourceUsedThresholdWithBE
		if s == nil || !*s.Enable {
			return errors.New("not seen yet")
		}
		return nil
	})
	if d := cmp.Diff([]string{"test:NodeSLO"}, rec.settle(t)); d != "" {
		t.Errorf("callbacks for the NodeSLO changes (-want +got):\n%s", d)
	}

	// Deleting the NodeMetric clears it.
	if err := c.Delete(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "inf-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NodeMetric deletion", func() error {
		if inf.GetNodeMetric() != nil {
			return errors.New("still there")
		}
		return nil
	})
}

// TestInformerServesLastStateWhileAPIServerUnreachable cuts the informer off the API server: the getters keep the
// last state, and once the API server is back the changes made meanwhile arrive.
func TestInformerServesLastStateWhileAPIServerUnreachable(t *testing.T) {
	e := env.Start(t)
	create(t, e.Client,
		testutil.Node("cut").Obj(),
		testutil.Pod("cut1").Node("cut").Container("c").Obj(),
		&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "cut"}},
	)
	proxy := newProxy(t, e.Config.Host)
	cfg := rest.CopyConfig(e.Config)
	cfg.Host = proxy.url()
	inf := start(t, cfg, "cut")
	eventually(t, "the first pod", wantPods(inf, "cut1"))

	proxy.cut()
	create(t, e.Client, testutil.Pod("cut2").Node("cut").Container("c").Obj())
	time.Sleep(2 * time.Second) // long enough for the watches to notice and fail their retries
	if err := wantPods(inf, "cut1")(); err != nil {
		t.Errorf("while unreachable: %v", err)
	}
	if inf.GetNode() == nil || inf.GetNodeSLO() == nil || !inf.HasSynced() {
		t.Error("while unreachable: lost the node, the NodeSLO or the synced state")
	}

	proxy.restore()
	eventually(t, "the pod created while unreachable", wantPods(inf, "cut1", "cut2"))
}

// proxy forwards TCP connections to an API server and can cut them all.
type proxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newProxy(t *testing.T, host string) *proxy {
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) url() string { return "https://" + p.addr }

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
}

// cut closes the listener and every open connection: the API server is unreachable.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// restore listens again on the same address.
func (p *proxy) restore() { p.listen(p.addr) }
