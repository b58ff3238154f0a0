package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Runnable is a long-running module of the agent.
type Runnable interface {
	// Name identifies the module in logs.
	Name() string
	// Start runs the module until ctx ends and then returns nil. An error means the module cannot run at all
	// (a port in use, a watch that cannot be set up) and stops the agent.
	Start(ctx context.Context) error
}

// Syncer is a Runnable the modules after it wait for.
type Syncer interface {
	// WaitForSync blocks until the module has a complete first state (true) or ctx ends (false).
	WaitForSync(ctx context.Context) bool
}

// runAll starts rs in order, waiting for each Syncer to sync before starting the next, calls ready once all have
// started, and blocks until ctx ends or a module fails. Then it stops every module and waits for them, at most
// shutdown. It returns the first module's error, or a timeout error when modules did not stop in time.
func runAll(ctx context.Context, rs []Runnable, shutdown time.Duration, ready func()) error {
	log := klog.FromContext(ctx)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, len(rs))
	for _, r := range rs {
		wg.Go(func() {
			if err := r.Start(klog.NewContext(runCtx, log.WithValues("module", r.Name()))); err != nil {
				errc <- fmt.Errorf("%s: %w", r.Name(), err)
			}
		})
		log.V(2).Info("module started", "module", r.Name())
		if s, ok := r.(Syncer); ok {
			synced := make(chan bool, 1)
			go func() { synced <- s.WaitForSync(runCtx) }()
			select {
			case err := <-errc:
				cancel()
				return stopAll(&wg, shutdown, err)
			case ok := <-synced:
				if !ok {
					return stopAll(&wg, shutdown, nil)
				}
				log.Info("module synced", "module", r.Name())
			}
		}
	}
	ready()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	return stopAll(&wg, shutdown, err)
}

// stopAll waits for the modules whose context has ended.
func stopAll(wg *sync.WaitGroup, shutdown time.Duration, err error) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return err
	case <-time.After(shutdown):
		return errors.Join(err, fmt.Errorf("modules did not stop within the shutdown timeout %s", shutdown))
	}
}
