package qosmanager

import (
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
	SortForEviction(c)
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
