package localcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// RestartContainerd stops the cluster's containerd (SIGTERM, as a service manager would) and starts it again with
// the same command line, and returns once its socket answers. The containers keep running in their shims, as on a
// real node; NRI plugins lose their connection and must connect again. The runtime hook's e2e test uses it.
func (c *Cluster) RestartContainerd(ctx context.Context) error {
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(c.layout.StateFile())
	if err != nil {
		return err
	}
	i := -1
	for j, p := range st.Processes {
		if p.Name == "containerd" {
			i = j
		}
	}
	if i < 0 || !st.Processes[i].Alive() {
		return errors.New("restarting containerd: the local cluster's containerd is not running")
	}
	old := st.Processes[i]
	if err := old.stop(ctx, stopGrace); err != nil {
		return fmt.Errorf("restarting containerd: %w", err)
	}
	proc, err := startProcess(old.Name, old.Command[0], old.Command[1:], c.layout.Log(old.Name))
	if err != nil {
		return fmt.Errorf("restarting containerd: %w", err)
	}
	st.Processes[i] = proc
	if err := st.write(c.layout.StateFile()); err != nil {
		return err
	}
	ready := socketReady(c.layout.ContainerdSocket())
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, componentReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if !proc.Alive() {
			return false, errors.New("containerd exited")
		}
		return ready(ctx) == nil, nil
	}); err != nil {
		return fmt.Errorf("waiting for the restarted containerd: %w\n%s", err, tail(c.layout.Log(old.Name), 20))
	}
	return nil
}
