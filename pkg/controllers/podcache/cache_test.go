package podcache

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// names are the names of pods, sorted.
func names(pods []*Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// change is one notification, as "old-node/name -> new-node/name" ("-" for none).
func change(old, new *Pod) string {
	s := func(p *Pod) string {
		if p == nil {
			return "-"
		}
		return p.NodeName + "/" + p.Name
	}
	return s(old) + " -> " + s(new)
}

// TestCacheFollowsTheWatch: the reflector's calls (a list, watch events, a relist after the watch expired) leave the
// cache holding exactly the pods the API server has, by node, and tell subscribers each change once.
func TestCacheFollowsTheWatch(t *testing.T) {
	c := newCache(nil)
	var got []string
	c.subscribe(func(old, new *Pod) { got = append(got, change(old, new)) })
	expect := func(step string, node string, want []string, changes ...string) {
		t.Helper()
		if have := names(c.OnNode(node)); !slices.Equal(have, want) {
			t.Errorf("%s: pods on %s = %v, want %v", step, node, have, want)
		}
		if changes != nil {
			if !slices.Equal(got, changes) {
				t.Errorf("%s: notified %q, want %q", step, got, changes)
			}
			got = nil
		}
	}
	if c.HasSynced() {
		t.Fatal("synced before the first list")
	}
	a, b, d := testutil.Pod("a").Node("n1").Obj(), testutil.Pod("b").Node("n1").Obj(), testutil.Pod("d").Node("n2").Obj()
	if err := c.Replace([]any{a, b, d}, "1"); err != nil {
		t.Fatal(err)
	}
	if !c.HasSynced() || c.WaitForSync(context.Background()) != nil {
		t.Error("not synced after the first list")
	}
	expect("list", "n1", []string{"a", "b"}, "- -> n1/a", "- -> n1/b", "- -> n2/d")

	if err := c.Update(testutil.Pod("b").Node("n2").Obj()); err != nil {
		t.Fatal(err)
	}
	expect("b moves", "n1", []string{"a"}, "n1/b -> n2/b")
	expect("b moves", "n2", []string{"b", "d"})

	if err := c.Delete(a); err != nil {
		t.Fatal(err)
	}
	expect("a deleted", "n1", nil, "n1/a -> -")
	if err := c.Delete(a); err != nil {
		t.Fatal(err)
	}
	expect("a deleted twice", "n1", nil, []string{}...)

	// A relist: d is gone, e is new, b is as it was.
	e := testutil.Pod("e").Node("n1").Obj()
	if err := c.Replace([]any{testutil.Pod("b").Node("n2").Obj(), e}, "2"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "n2/d -> -") || !slices.Contains(got, "- -> n1/e") || len(got) != 3 {
		t.Errorf("relist notified %q, want d gone, e new and b's update", got)
	}
	got = nil
	expect("relist", "n2", []string{"b"})
	if c.Len() != 2 {
		t.Errorf("the cache holds %d pods, want 2", c.Len())
	}

	// What is not a pod is refused and changes nothing.
	for _, err := range []error{c.Add(&corev1.Node{}), c.Update("pod"), c.Delete(42), c.Replace([]any{e, &corev1.Node{}}, "3")} {
		if err == nil {
			t.Error("a store call with something other than a pod succeeded")
		}
	}
	expect("bad input", "n1", []string{"e"}, []string{}...)
}

// TestCacheSharesOnlyEqualShapes: pods equal in class, requests, limits and profile share one Shape; a pod that
// differs in any of them, or only in how a quantity is written (which decides how a node's sum prints), does not.
func TestCacheSharesOnlyEqualShapes(t *testing.T) {
	base := func(name string) *testutil.PodBuilder {
		return testutil.Pod(name).Node("n").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2")
	}
	same := base("same").Obj()
	same.Spec.Containers[0].Image, same.Spec.Containers[0].Env = "other:v2", []corev1.EnvVar{{Name: "B", Value: "b"}}
	pods := map[string]*corev1.Pod{
		"first":   base("first").Obj(),
		"same":    same,
		"written": testutil.Pod("written").Node("n").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1000m", "memory", "1024Mi").Limits("cpu", "2").Obj(),
		"request": testutil.Pod("request").Node("n").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1001m", "memory", "1Gi").Limits("cpu", "2").Obj(),
		"limit":   testutil.Pod("limit").Node("n").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1", "memory", "1Gi").Obj(),
		"format":  testutil.Pod("format").Node("n").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1", "memory", "1073741824").Limits("cpu", "2").Obj(),
		"label":   base("label").Label(slov1alpha1.LabelPriorityClass, "mid").Obj(),
		"qos":     base("qos").Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
		"profile": base("profile").Label(configv1alpha1.LabelColocationProfile, "batch").Obj(),
	}
	c := newCache(nil)
	for _, p := range pods {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	cached := map[string]*Pod{}
	for _, p := range c.OnNode("n") {
		cached[p.Name] = p
	}
	for _, name := range []string{"same", "written"} {
		if cached[name].Shape != cached["first"].Shape {
			t.Errorf("pod %q does not share the shape of a pod equal to it", name)
		}
	}
	for _, name := range []string{"request", "limit", "format", "label", "qos", "profile"} {
		if cached[name].Shape == cached["first"].Shape {
			t.Errorf("pod %q shares the shape of a pod that differs from it", name)
		}
	}
	if cached["first"].Namespace != cached["same"].Namespace || cached["first"].NodeName != "n" {
		t.Error("namespace or node differ")
	}
}

// TestProfilePodsCountsUnfinishedPods: ProfilePods counts the pods carrying a profile's label that have not finished,
// through every change the watch reports: a new pod, a finished one, a label taken off or moved to another profile,
// a deletion and a relist.
func TestProfilePodsCountsUnfinishedPods(t *testing.T) {
	c := newCache(nil)
	pod := func(name, profile string, phase corev1.PodPhase) *corev1.Pod {
		b := testutil.Pod(name).Node("n1").Phase(phase)
		if profile != "" {
			b = b.Label(configv1alpha1.LabelColocationProfile, profile)
		}
		return b.Obj()
	}
	expect := func(step string, want map[string]int) {
		t.Helper()
		got := map[string]int{}
		for _, p := range []string{"etl", "spark", ""} {
			if n := c.ProfilePods(p); n != 0 {
				got[p] = n
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: ProfilePods (-want +got):\n%s", step, diff)
		}
	}
	if err := c.Replace([]any{pod("a", "etl", corev1.PodRunning), pod("b", "etl", corev1.PodPending), pod("c", "", corev1.PodRunning),
		pod("d", "spark", corev1.PodSucceeded)}, "1"); err != nil {
		t.Fatal(err)
	}
	expect("list", map[string]int{"etl": 2})
	steps := []struct {
		name string
		do   func() error
		want map[string]int
	}{
		{"new pod", func() error { return c.Add(pod("e", "spark", corev1.PodRunning)) }, map[string]int{"etl": 2, "spark": 1}},
		{"finished", func() error { return c.Update(pod("a", "etl", corev1.PodFailed)) }, map[string]int{"etl": 1, "spark": 1}},
		{"label taken off", func() error { return c.Update(pod("b", "", corev1.PodRunning)) }, map[string]int{"spark": 1}},
		{"label to another profile", func() error { return c.Update(pod("e", "etl", corev1.PodRunning)) }, map[string]int{"etl": 1}},
		{"unknown phase counts", func() error { return c.Update(pod("e", "etl", corev1.PodUnknown)) }, map[string]int{"etl": 1}},
		{"deleted", func() error { return c.Delete(pod("e", "etl", corev1.PodUnknown)) }, map[string]int{}},
		{"relist", func() error {
			return c.Replace([]any{pod("f", "spark", corev1.PodRunning), pod("g", "spark", corev1.PodPending)}, "2")
		}, map[string]int{"spark": 2}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		expect(s.name, s.want)
	}
	if len(c.profilePods) != 1 {
		t.Errorf("the counts keep %d profiles, want 1: a count that fell to 0 is forgotten", len(c.profilePods))
	}
}

func TestInternTableStartsAgainWhenFull(t *testing.T) {
	table := internTable[*int]{max: 2}
	one, two, three := new(int), new(int), new(int)
	if table.get("1", func() *int { return one }) != one || table.get("1", func() *int { return new(int) }) != one {
		t.Fatal("a value is not shared")
	}
	table.get("2", func() *int { return two })
	if table.get("3", func() *int { return three }) != three || len(table.m) != 1 {
		t.Errorf("a full table holds %d entries after a new one, want 1 (it starts again)", len(table.m))
	}
	if fresh := new(int); table.get("1", func() *int { return fresh }) != fresh {
		t.Error("a table that started again still returns a value from before")
	}
}

// TestSourceEnqueuesTheNodes: a controller's Source enqueues the node of every pod created or deleted, both nodes of
// a pod that moved, and the node of an update only when the controller's test says it changed.
func TestSourceEnqueuesTheNodes(t *testing.T) {
	c := newCache(nil)
	if err := c.Replace(nil, "1"); err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	phaseChanged := func(old, new *Pod) bool { return old.Phase != new.Phase }
	src := c.Source(phaseChanged)
	if err := src.Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	drain := func() []string {
		var out []string
		for q.Len() > 0 {
			r, _ := q.Get()
			out = append(out, r.Name)
			q.Done(r)
			q.Forget(r)
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"created", func() error { return c.Add(testutil.Pod("a").Node("n1").Obj()) }, []string{"n1"}},
		{"label only", func() error { return c.Update(testutil.Pod("a").Node("n1").Label("x", "y").Obj()) }, nil},
		{"phase", func() error { return c.Update(testutil.Pod("a").Node("n1").Phase(corev1.PodSucceeded).Obj()) }, []string{"n1"}},
		{"moved", func() error { return c.Update(testutil.Pod("a").Node("n2").Phase(corev1.PodSucceeded).Obj()) }, []string{"n1", "n2"}},
		{"deleted", func() error { return c.Delete(testutil.Pod("a").Node("n2").Obj()) }, []string{"n2"}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		if got := drain(); !slices.Equal(got, s.want) {
			t.Errorf("%s: enqueued %v, want %v", s.name, got, s.want)
		}
	}
}

// TestSourceFuncEnqueuesWhatItIsTold: SourceFunc hands the controller's function every change, old nil for a new
// pod and new nil for one gone, and enqueues each request it returns.
func TestSourceFuncEnqueuesWhatItIsTold(t *testing.T) {
	c := newCache(nil)
	if err := c.Replace(nil, "1"); err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	var seen []string
	src := c.SourceFunc(func(old, new *Pod) []reconcile.Request {
		seen = append(seen, change(old, new))
		var reqs []reconcile.Request
		for _, p := range []*Pod{old, new} {
			if p != nil && p.Profile != "" {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Profile}})
			}
		}
		return reqs
	})
	if err := src.Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	for _, do := range []func() error{
		func() error {
			return c.Add(testutil.Pod("a").Node("n1").Label(configv1alpha1.LabelColocationProfile, "etl").Obj())
		},
		func() error {
			return c.Update(testutil.Pod("a").Node("n1").Label(configv1alpha1.LabelColocationProfile, "spark").Obj())
		},
		func() error { return c.Add(testutil.Pod("b").Node("n1").Obj()) },
		func() error { return c.Delete(testutil.Pod("b").Node("n1").Obj()) },
	} {
		if err := do(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"- -> n1/a", "n1/a -> n1/a", "- -> n1/b", "n1/b -> -"}; !slices.Equal(seen, want) {
		t.Errorf("the function saw %q, want %q", seen, want)
	}
	var got []string
	for q.Len() > 0 {
		r, _ := q.Get()
		got = append(got, r.Name)
		q.Done(r)
	}
	if slices.Sort(got); !slices.Equal(got, []string{"etl", "spark"}) {
		t.Errorf("enqueued %v, want etl and spark", got)
	}
}

// TestWaitForSyncEndsWithItsContext: a source whose cache never lists gives up when the controller does, and says so.
func TestWaitForSyncEndsWithItsContext(t *testing.T) {
	c := newCache(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := c.Source(func(_, _ *Pod) bool { return true }).WaitForSync(ctx)
	if err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Fatalf("WaitForSync = %v, want an error that says the pods were not listed", err)
	}
}

// TestStreamedListIsTransformedOnArrival: the reflector's store of a streamed list keys what the cache's Transformer
// makes (client-go's own key function), and the cache takes the Pods that store hands over as it takes pods.
func TestStreamedListIsTransformedOnArrival(t *testing.T) {
	c := newCache(nil)
	stream := toolscache.NewStore(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.WithTransformer(c.Transformer()))
	for _, name := range []string{"a", "b"} {
		if err := stream.Add(testutil.Pod(name).Namespace("ns").Node("n1").Obj()); err != nil {
			t.Fatal(err)
		}
	}
	if keys := stream.ListKeys(); !slices.Equal(sorted(keys), []string{"ns/a", "ns/b"}) {
		t.Fatalf("the stream's store keys %v, want ns/a and ns/b", keys)
	}
	for _, obj := range stream.List() {
		if _, ok := obj.(*Pod); !ok {
			t.Fatalf("the stream's store holds a %T, want the cache's Pod", obj)
		}
	}
	if err := c.Replace(stream.List(), "1"); err != nil {
		t.Fatal(err)
	}
	if got := names(c.OnNode("n1")); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("pods on n1 = %v, want a and b", got)
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
