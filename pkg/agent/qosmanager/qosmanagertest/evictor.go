// Package qosmanagertest has what the QoS plugins' tests share: a simulated node with the cgroup tree, executor, store,
// cache, clock, events and log a plugin runs on (Node), the four cgroup layouts (ForEachLayout), and recording
// stand-ins for the plugins' collaborators: the evictor (the real one, pkg/agent/evictor, is tested against the API
// server on its own) and the NodeMetric reporter the memory pressure goes to (Pressure; the real one is
// pkg/agent/reporter).
package qosmanagertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// Evictor records every eviction and local kill asked for. Pods named in Refuse are refused (a
// PodDisruptionBudget), pods named in Fail get an error; with Offline every eviction fails as if the API server did
// not answer. Reason, when set, is the only reason accepted.
type Evictor struct {
	Reason  string
	Refuse  map[string]bool
	Fail    map[string]bool
	Offline bool

	mu      sync.Mutex
	asked   []string
	evicted []string
	killed  []string
	msgs    []string
}

var _ qosmanager.Evictor = &Evictor{}

// Evict implements qosmanager.Evictor.
func (f *Evictor) Evict(_ context.Context, pod *corev1.Pod, reason, message string) (evictor.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Reason != "" && reason != f.Reason {
		return "", fmt.Errorf("reason %q, want %q", reason, f.Reason)
	}
	f.asked = append(f.asked, pod.Name)
	switch {
	case f.Offline:
		return "", fmt.Errorf("evicting %s: %w", pod.Name, evictor.ErrUnreachable)
	case f.Fail[pod.Name]:
		return "", errors.New("the server is currently unable to handle the request")
	case f.Refuse[pod.Name]:
		return evictor.Refused, nil
	}
	f.evicted = append(f.evicted, pod.Name)
	f.msgs = append(f.msgs, message)
	return evictor.Evicted, nil
}

// KillLocally implements qosmanager.Evictor.
func (f *Evictor) KillLocally(_ context.Context, pod *corev1.Pod, podDir, _, message string) (evictor.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, pod.Name+" in "+podDir)
	f.msgs = append(f.msgs, message)
	return evictor.Killed, nil
}

// Asked lists the pods whose eviction was asked for, in order.
func (f *Evictor) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// Evicted lists the pods evicted, in order.
func (f *Evictor) Evicted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.evicted...)
}

// Killed lists the pods killed locally, as "name in podDir", in order.
func (f *Evictor) Killed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.killed...)
}

// Messages lists the messages of the evictions and kills, in order.
func (f *Evictor) Messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.msgs...)
}

// Script makes the evictions of the pods named in refuse refused and of those in fail fail, from now on.
func (f *Evictor) Script(refuse, fail []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Refuse, f.Fail = map[string]bool{}, map[string]bool{}
	for _, n := range refuse {
		f.Refuse[n] = true
	}
	for _, n := range fail {
		f.Fail[n] = true
	}
}

// Expect checks the pods whose eviction was asked for (nil: the same as evicted) and those evicted, in order.
func (f *Evictor) Expect(t testing.TB, asked, evicted []string) {
	t.Helper()
	if asked == nil {
		asked = evicted
	}
	if diff := cmp.Diff(asked, f.Asked()); diff != "" {
		t.Errorf("pods asked for (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(evicted, f.Evicted()); diff != "" {
		t.Errorf("pods evicted (-want +got):\n%s", diff)
	}
}

// ExpectErr stops the test unless err is nil where want is "", or contains want.
func ExpectErr(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

// Reset forgets what was recorded.
func (f *Evictor) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked, f.evicted, f.killed, f.msgs = nil, nil, nil, nil
}
