package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// step is a Runnable that records its life in a shared log; with sync set it is a Syncer that syncs when told.
type step struct {
	name    string
	log     *eventLog
	sync    chan struct{} // nil: not a Syncer
	fail    error         // returned at start
	linger  time.Duration // how long it takes to stop
	started chan struct{}
}

type eventLog struct {
	mu sync.Mutex
	e  []string
}

func (l *eventLog) add(s string) { l.mu.Lock(); l.e = append(l.e, s); l.mu.Unlock() }
func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.e...)
}

func (s *step) Name() string { return s.name }

func (s *step) Start(ctx context.Context) error {
	s.log.add("start " + s.name)
	close(s.started)
	if s.fail != nil {
		return s.fail
	}
	<-ctx.Done()
	time.Sleep(s.linger)
	s.log.add("stop " + s.name)
	return nil
}

type syncStep struct{ *step }

func (s syncStep) WaitForSync(ctx context.Context) bool {
	select {
	case <-s.sync:
		s.log.add("synced " + s.name)
		return true
	case <-ctx.Done():
		return false
	}
}

func newStep(l *eventLog, name string) *step {
	return &step{name: name, log: l, started: make(chan struct{})}
}

func TestRunAllStartsInOrderAndWaitsForSync(t *testing.T) {
	l := &eventLog{}
	a := newStep(l, "a")
	b := syncStep{newStep(l, "b")}
	b.sync = make(chan struct{})
	c := newStep(l, "c")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- runAll(ctx, []Runnable{a, b, c}, 5*time.Second, func() { l.add("ready") }) }()
	<-b.started
	time.Sleep(50 * time.Millisecond)
	// a and b are launched (in goroutines, so in either order); c waits for b.
	before := l.get()
	slices.Sort(before)
	if d := cmp.Diff([]string{"start a", "start b"}, before); d != "" {
		t.Fatalf("before b synced (-want +got):\n%s", d)
	}
	close(b.sync)
	<-c.started
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := l.get()
	// c and ready come after b synced, in either order: ready means every module has been launched.
	if got[2] != "synced b" {
		t.Errorf("start order: %v", got)
	}
	if rest := strings.Join(got[3:5], ","); rest != "start c,ready" && rest != "ready,start c" {
		t.Errorf("after b synced: %s", rest)
	}
	if len(got) != 8 {
		t.Errorf("every module should have stopped: %v", got)
	}
}

func TestRunAllStopsOnAFailingModule(t *testing.T) {
	l := &eventLog{}
	a := newStep(l, "a")
	b := newStep(l, "b")
	b.fail = errors.New("port in use")
	err := runAll(context.Background(), []Runnable{a, b}, 5*time.Second, func() {})
	if err == nil || !strings.Contains(err.Error(), "b: port in use") {
		t.Fatalf("want the module's error, got %v", err)
	}
	if got := l.get(); got[len(got)-1] != "stop a" {
		t.Errorf("a was not stopped: %v", got)
	}
}

func TestRunAllFailsWhileWaitingForSync(t *testing.T) {
	l := &eventLog{}
	b := newStep(l, "b")
	b.fail = errors.New("never started")
	failing := newStep(l, "watch")
	failing.fail = errors.New("cannot watch")
	w := syncStep{failing}
	w.sync = make(chan struct{})
	err := runAll(context.Background(), []Runnable{w, b}, 5*time.Second, func() { t.Error("ready despite a failure") })
	if err == nil || !strings.Contains(err.Error(), "watch: cannot watch") {
		t.Fatalf("want the syncing module's error, got %v", err)
	}
	for _, e := range l.get() {
		if e == "start b" {
			t.Error("b started although the module before it never synced")
		}
	}
}

func TestRunAllShutdownTimeout(t *testing.T) {
	l := &eventLog{}
	slow := newStep(l, "slow")
	slow.linger = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- runAll(ctx, []Runnable{slow}, 100*time.Millisecond, func() {}) }()
	<-slow.started
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "did not stop within the shutdown timeout") {
		t.Fatalf("want a shutdown timeout, got %v", err)
	}
}
