package qosmanager

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func meta(b *testutil.PodBuilder) *statesinformer.PodMeta {
	s := statesinformer.NewStore()
	p := b.Obj()
	s.SetPod(p)
	return s.GetPod(p.UID)
}

func TestSortForEviction(t *testing.T) {
	c := []Candidate{
		{Meta: meta(testutil.Pod("batch-big").Priority(5500)), Usage: 900},
		{Meta: meta(testutil.Pod("free-small").Priority(3500)), Usage: 10},
		{Meta: meta(testutil.Pod("free-big").Priority(3500)), Usage: 500},
		{Meta: meta(testutil.Pod("free-lowest").Priority(3000)), Usage: 1},
		{Meta: meta(testutil.Pod("no-priority-b")), Usage: 5},
		{Meta: meta(testutil.Pod("no-priority-a")), Usage: 5},
		{Meta: meta(testutil.Pod("batch-small").Priority(5500)), Usage: 100},
		// The mid tier goes after every best-effort pod, whatever its priority and usage.
		{Meta: meta(testutil.Pod("mid-big").Priority(7000)), Usage: 5000},
		{Meta: meta(testutil.Pod("mid-by-label").Label(slov1alpha1.LabelPriorityClass, "mid")), Usage: 1},
	}
	SortForEviction(context.Background(), c, nil)
	var got []string
	for _, x := range c {
		got = append(got, x.Meta.Pod.Name)
	}
	// No priority counts as 0 (ties by name), then 3000, then 3500 by usage 500 > 10, then 5500 by 900 > 100; then
	// the mid tier, by the same rules (the labelled one has no priority: 0).
	want := []string{"no-priority-a", "no-priority-b", "free-lowest", "free-big", "free-small", "batch-big", "batch-small",
		"mid-by-label", "mid-big"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestSortForEvictionByAnnotation: a pod's eviction priority (gleaner.sh's annotation over Koordinator's) orders it
// within its tier before spec.priority, never across tiers; a malformed one counts as 0 and is said once per pod
// and value, with a Warning event.
func TestSortForEvictionByAnnotation(t *testing.T) {
	ann := func(name string, priority int32, kv ...string) Candidate {
		b := testutil.Pod(name).Priority(priority)
		for i := 0; i+1 < len(kv); i += 2 {
			b = b.Annotation(kv[i], kv[i+1])
		}
		return Candidate{Meta: meta(b), Usage: 1}
	}
	const own, koord = slov1alpha1.AnnotationEvictionPriority, slov1alpha1.AnnotationEvictionPriorityAlias
	c := []Candidate{
		ann("free", 3000),                                // eviction priority 0, spec.priority 3000
		ann("batch-first", 5500, own, "-10"),             // asks to go before the free pod
		ann("batch-koord", 5500, koord, "-5"),            // Koordinator's annotation
		ann("batch-both", 5500, own, "5", koord, "-100"), // gleaner.sh's wins: 5
		ann("batch-bad", 5000, own, "soon"),              // malformed: 0, and then its spec.priority
		ann("mid-first", 7000, own, "-1000"),             // never before best-effort pods
	}
	events := &testutil.Events{}
	bad := NewWarnings(events, ReasonBadEvictionPriority)
	for range 2 {
		SortForEviction(context.Background(), c, bad)
	}
	var got []string
	for _, x := range c {
		got = append(got, x.Meta.Pod.Name)
	}
	want := []string{"batch-first", "batch-koord", "free", "batch-bad", "batch-both", "mid-first"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if got := events.List(); len(got) != 1 || !strings.Contains(got[0], `batch-bad Warning InvalidEvictionPriority: annotation gleaner.sh/eviction-priority: "soon" is not an integer`) {
		t.Errorf("events %q, want one warning about batch-bad", got)
	}
	for _, v := range []string{"2147483648", "-2147483649", "1.5"} {
		if _, err := EvictionPriority(testutil.Pod("x").Annotation(own, v).Obj()); err == nil {
			t.Errorf("eviction priority %q was taken", v)
		}
	}
}

// UnderPriorityThreshold takes every pod without a threshold, and pods at or below it with one (no priority is 0).
func TestUnderPriorityThreshold(t *testing.T) {
	threshold := int64(5999)
	for _, tt := range []struct {
		pod  *statesinformer.PodMeta
		th   *int64
		want bool
	}{
		{meta(testutil.Pod("mid").Priority(7000)), nil, true},
		{meta(testutil.Pod("mid").Priority(7000)), &threshold, false},
		{meta(testutil.Pod("batch").Priority(5999)), &threshold, true},
		{meta(testutil.Pod("none")), &threshold, true},
	} {
		if got := UnderPriorityThreshold(tt.pod, tt.th); got != tt.want {
			t.Errorf("UnderPriorityThreshold(%s, %v) = %v, want %v", tt.pod.Pod.Name, tt.th, got, tt.want)
		}
	}
}

func TestEvictionsGoing(t *testing.T) {
	const settle = 30 * time.Second
	now := time.Unix(1_700_000_000, 0)
	e := NewEvictions(settle)
	requested := meta(testutil.Pod("requested"))
	e.Requested(requested.Pod.UID, now)
	terminating := meta(testutil.Pod("terminating"))
	terminating.Pod.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Second)} // deleted now, grace 10 s
	other := meta(testutil.Pod("other"))

	tests := []struct {
		name string
		m    *statesinformer.PodMeta
		at   time.Duration
		want bool
	}{
		{"requested, just now", requested, 0, true},
		{"requested, 29s ago", requested, 29 * time.Second, true},
		{"requested, 30s ago: counts again", requested, 30 * time.Second, false},
		{"terminating, before its deletion time", terminating, 5 * time.Second, true},
		{"terminating, 10s+29s", terminating, 39 * time.Second, true},
		{"terminating, 10s+30s: stuck, counts again", terminating, 40 * time.Second, false},
		{"neither", other, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.Going(tt.m, now.Add(tt.at)); got != tt.want {
				t.Errorf("Going = %v, want %v", got, tt.want)
			}
		})
	}

	e.Prune(now.Add(settle - time.Nanosecond))
	if e.Len() != 1 {
		t.Errorf("pruned a request younger than settle: %d left", e.Len())
	}
	e.Prune(now.Add(settle))
	if e.Len() != 0 {
		t.Errorf("kept a request settle old: %d left", e.Len())
	}
}
