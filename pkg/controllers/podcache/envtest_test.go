package podcache

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TestCacheOfARealAPIServer: against a real API server the cache lists the bound pods and only them, keeps what it
// read of them (the pod's UID, its request), and follows a pod's phase and deletion through the watch.
func TestCacheOfARealAPIServer(t *testing.T) {
	e := env.Start(t)
	bound := e.CreatePod(t, testutil.Pod("bound").Node("pc-n1").Requests("cpu", "1000m", "memory", "1Gi").Obj())
	e.CreatePod(t, testutil.Pod("unbound").Requests("cpu", "1").Obj())

	c, err := New(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if names := names(c.OnNode("pc-n1")); !slices.Equal(names, []string{"bound"}) || c.Len() != 1 {
		t.Fatalf("pods on pc-n1 = %v (%d in the cache), want the bound pod alone", names, c.Len())
	}
	p := c.OnNode("pc-n1")[0]
	if p.UID != bound.UID || p.Requests.Cpu().String() != "1" || !p.Counted() {
		t.Errorf("cached pod: UID %s (want %s), cpu request %s (want 1), counted %v", p.UID, bound.UID, p.Requests.Cpu(), p.Counted())
	}

	bound.Status.Phase = corev1.PodSucceeded
	if err := e.Client.Status().Update(ctx, bound); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache to see the pod succeed", func() error {
		if on := c.OnNode("pc-n1"); len(on) != 1 || on[0].Counted() {
			return fmt.Errorf("pods on pc-n1: %d, the first counted", len(on))
		}
		return nil
	})
	if err := e.Client.Delete(ctx, bound, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache to forget the deleted pod", func() error {
		if n := c.Len(); n != 0 {
			return fmt.Errorf("%d pods cached", n)
		}
		return nil
	})
}

// TestCacheWithoutAnAPIServer: a cache whose API server does not answer never says it has synced, and its waiters
// give up with their context.
func TestCacheWithoutAnAPIServer(t *testing.T) {
	c, err := New(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	wait, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if err := c.WaitForSync(wait); err == nil || c.HasSynced() {
		t.Errorf("synced without an API server (err %v)", err)
	}
	cancel()
	<-done
}
