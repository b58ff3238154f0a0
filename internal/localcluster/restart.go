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
	return c.restart(ctx, "containerd", socketReady(c.layout.ContainerdSocket()), 1)
}

// RestartKubelet stops the cluster's kubelet (SIGTERM) and starts it again with the same command line, as a
// service manager does: a kubelet that exits within KubeletStayUp of a start is started again after
// KubeletRestartDelay (systemd's Restart=always with kubeadm's RestartSec=10s), at most three starts in all. It
// returns once a kubelet has answered its health endpoint and run for KubeletStayUp. The pods keep running; the
// kubelet admits them again at its start, against the Node as it reads it then. The amplification e2e test uses it.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	return c.restart(ctx, "kubelet", httpReady("http://"+net.JoinHostPort(Host, strconv.Itoa(KubeletHealthzPort))+"/healthz", nil, "", "ok"), 3)
}

// How RestartKubelet supervises the kubelet it starts again.
const (
	KubeletStayUp       = 15 * time.Second
	KubeletRestartDelay = 10 * time.Second
)

// restart stops the component name and starts it again with the same command line, and returns once ready. With
// starts above 1 it also waits KubeletStayUp and starts a component that exited again, after KubeletRestartDelay.
func (c *Cluster) restart(ctx context.Context, name string, ready func(context.Context) error, starts int) error {
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
	for n := 1; ; n++ {
		err := c.startAgain(ctx, st, i, old, ready, starts > 1)
		if err == nil || n >= starts {
			return err
		}
		c.logf("%s: start %d of %d failed (%v); starting it again in %s, as a service manager would", name, n, starts, err, KubeletRestartDelay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(KubeletRestartDelay):
		}
	}
}

// startAgain starts the command of old as st's process i and waits until it is ready (and, with stayUp, still
// running KubeletStayUp later).
func (c *Cluster) startAgain(ctx context.Context, st *State, i int, old Process, ready func(context.Context) error, stayUp bool) error {
	name := old.Name
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
	if !stayUp {
		return nil
	}
	deadline := time.Now().Add(KubeletStayUp)
	for time.Now().Before(deadline) {
		if !proc.Alive() {
			return fmt.Errorf("%s exited after it answered its health check:\n%s", name, tail(c.layout.Log(old.Name), 5))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}
