package podcache

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
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

// TestCacheListsInPagesWhereItCannotStream: with client-go's streaming lists off (as against an API server without
// them), the cache fills through its own lister, which reads the pods a page at a time in one consistent list and
// keeps each page as Pods; the reflector takes that list as it is.
func TestCacheListsInPagesWhereItCannotStream(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	e := env.Start(t)
	var want []string
	for i := range 25 {
		want = append(want, e.CreatePod(t, testutil.Pod(fmt.Sprintf("paged-%02d", i)).Node("pc-paged").Requests("cpu", "100m").Obj()).Name)
	}
	e.CreatePod(t, testutil.Pod("paged-unbound").Requests("cpu", "100m").Obj())

	// The lister alone, three pages of ten: every bound pod once, as a Pod, with the list's resource version.
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(nil)
	var pages []int
	obj, err := c.pagedList(context.Background(), 10, func(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
		o.FieldSelector = "spec.nodeName=pc-paged"
		list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		if err == nil {
			pages = append(pages, len(list.Items))
		}
		return list, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pages, []int{10, 10, 5}) {
		t.Errorf("pages of %v pods, want 10, 10 and 5", pages)
	}
	list := obj.(*podList)
	var got []string
	for _, item := range list.Items {
		got = append(got, item.(*listedPod).Name)
	}
	if !slices.Equal(got, want) || list.ResourceVersion == "" {
		t.Errorf("listed %v at resource version %q, want %v at one", got, list.ResourceVersion, want)
	}

	// The whole cache: the reflector lists through the paged lister and hands its Pods to Replace.
	c, err = New(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	lw := c.lw.(*toolscache.ListWatch)
	lists := 0
	inner := lw.ListWithContextFunc
	lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		lists++
		return inner(ctx, o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(c.OnNode("pc-paged")); !slices.Equal(got, want) || lists == 0 {
		t.Errorf("cached %v through %d lists of the cache's lister, want %v through one", got, lists, want)
	}
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
