package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// RestartContainerd stops the cluster's containerd (SIGTERM, as a service manager would) and starts it again with
// the same command line, and returns once its socket answers. The containers keep running in their shims, as on a
// real node; NRI plugins lose their connection and must connect again. The runtime hook's e2e test uses it.
func (c *Cluster) RestartContainerd(ctx context.Context) error {
	return c.restart(ctx, "containerd", socketReady(c.layout.ContainerdSocket()))
}

// RestartKubelet stops the cluster's kubelet (SIGTERM) and starts it again with the same command line, and returns
// once its health endpoint answers. The pods keep running; the kubelet admits them again at its start, against the
// Node as it reads it then. The amplification e2e test uses it.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	return c.restart(ctx, "kubelet", httpReady("http://"+net.JoinHostPort(Host, strconv.Itoa(KubeletHealthzPort))+"/healthz", nil, "", "ok"))
}

// restart stops the component name and starts it again with the same command line, and returns once ready.
func (c *Cluster) restart(ctx context.Context, name string, ready func(context.Context) error) error {
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
		if p.Name == name {
			i = j
		}
	}
	if i < 0 || !st.Processes[i].Alive() {
		return fmt.Errorf("restarting %s: the local cluster's %s is not running", name, name)
	}
	old := st.Processes[i]
	if err := old.stop(ctx, stopGrace); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	proc, err := startProcess(old.Name, old.Command[0], old.Command[1:], c.layout.Log(old.Name))
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	st.Processes[i] = proc
	if err := st.write(c.layout.StateFile()); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, componentReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if !proc.Alive() {
			return false, errors.New(name + " exited")
		}
		return ready(ctx) == nil, nil
	}); err != nil {
		return fmt.Errorf("waiting for the restarted %s: %w\n%s", name, err, tail(c.layout.Log(old.Name), 20))
	}
	return nil
}
