package runtimehook

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// Reconciler is the hook's fallback: a Runnable that, when it starts and every interval after, walks the node's pods
// and hands the executor the values the features of its Registry give each pod's cgroup and its running containers'
// (StageReconcile: for batch and mid pods, their tier values fitted under the cgroups above, as at creation). It runs in every mode but off: with NRI it catches
// the pods that started while the plugin was not connected or the agent was down, without NRI it is the hook.
//
// The executor writes a value only when it does not already hold it, so a round over pods that have their values
// writes nothing; the executor's own resync (--executor-resync) undoes later changes made behind its back.
type Reconciler struct {
	d        Deps
	fs       *Registry
	status   *Status
	interval time.Duration
}

// NewReconciler returns the reconciler; d must be complete (see New).
func NewReconciler(d Deps, fs *Registry, status *Status, interval time.Duration) *Reconciler {
	return &Reconciler{d: d, fs: fs, status: status, interval: interval}
}

// Name is the reconciler's name as a Runnable.
func (r *Reconciler) Name() string { return "runtimehook-reconciler" }

// Start reconciles at once (the agent starts it after the states informer synced), then every interval, until ctx
// ends. It always returns nil: a round's errors are logged and counted, and the next round tries again.
func (r *Reconciler) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	log.Info("runtime hook started", "configured", r.status.Info().Configured, "mode", r.status.Mode(), "reconcileInterval", r.interval)
	t := r.d.Clock.NewTicker(r.interval)
	defer t.Stop()
	for {
		if err := r.Reconcile(ctx); err != nil {
			log.Error(err, "runtime hook reconciler: some values could not be written; the next round tries again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Reconcile runs one round and returns the errors of the writes that failed, joined.
func (r *Reconciler) Reconcile(ctx context.Context) error {
	var errs []error
	n := 0
	for _, m := range r.d.States.GetAllPods() {
		u, err := r.podUpdates(ctx, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", m.Pod.Namespace, m.Pod.Name, err))
		}
		if len(u) == 0 {
			continue
		}
		n++
		if err := r.d.Executor.Apply(ctx, OwnerReconciler, u...); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", m.Pod.Namespace, m.Pod.Name, err))
		}
	}
	err := errors.Join(errs...)
	r.status.reconciled(n, err)
	return err
}

// podUpdates are the writes for one pod: its cgroup and each running container's (the executor orders them for the
// kernel). A container whose cgroup cannot be named (an unknown runtime) is skipped with a log line.
func (r *Reconciler) podUpdates(ctx context.Context, m *statesinformer.PodMeta) ([]executor.Update, error) {
	pod := m.Pod
	dir := r.d.Layout.PodDir(pod)
	reason := "runtime hook reconciler, pod " + pod.Namespace + "/" + pod.Name
	pv, err := r.fs.podValues(Target{Stage: StageReconcile, Pod: m, PodDir: dir})
	if err != nil {
		return nil, err
	}
	u := updates(dir, pv, reason)
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if cs.State.Running == nil || cs.ContainerID == "" {
				continue
			}
			v, err := r.fs.containerValues(Target{Stage: StageReconcile, Pod: m, PodDir: dir, Container: cs.Name})
			if errors.Is(err, ErrContainerUnknown) || (err == nil && v.Empty()) {
				continue
			}
			if err != nil {
				return nil, err
			}
			cdir, err := r.d.Layout.ContainerDir(dir, cs.ContainerID)
			if err != nil {
				klog.FromContext(ctx).V(2).Info("runtime hook reconciler: skipping a container", "pod", pod.Namespace+"/"+pod.Name, "container", cs.Name, "reason", err)
				continue
			}
			u = append(u, updates(cdir, v, reason+" container "+cs.Name)...)
		}
	}
	return u, nil
}
