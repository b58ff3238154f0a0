package runtimehook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
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

	oomOrder  bool            // the registry has the OOM order: best-effort host applications get 1000 too
	hostsKill map[string]bool // host applications' cgroups given oom_score_adj 1000
}

// NewReconciler returns the reconciler; d must be complete (see New).
func NewReconciler(d Deps, fs *Registry, status *Status, interval time.Duration) *Reconciler {
	return &Reconciler{d: d, fs: fs, status: status, interval: interval,
		oomOrder: slices.Contains(fs.Names(), OOMScoreFeatureName), hostsKill: map[string]bool{}}
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
	if err := r.hosts(ctx); err != nil {
		errs = append(errs, fmt.Errorf("host applications: %w", err))
	}
	err := errors.Join(errs...)
	r.status.reconciled(n, err)
	return err
}

// hosts puts the NodeSLO's host applications of class BE in the OOM order's best-effort band: oom_score_adj 1000,
// held, for every process of their cgroups, so that a backup daemon outside Kubernetes dies before the services as
// a batch pod does (other host applications keep theirs: 0 by default, below every pod). An application that is no
// longer BE gets 0 written once and is let go, so that it may set its own again; one removed from the NodeSLO is let
// go as it is (its cgroup is no longer known as the application's). What this process set is not remembered across
// a restart: an application that stops being BE while the agent is down keeps 1000 until it restarts.
func (r *Reconciler) hosts(ctx context.Context) error {
	if !r.oomOrder {
		return nil
	}
	var hold []executor.Update
	var errs []error
	seen := map[string]bool{}
	if slo := r.d.States.GetNodeSLO(); slo != nil {
		for _, app := range slo.Spec.HostApplications {
			base, parent, rel := app.CgroupLocation()
			dir := r.d.Layout.HostDir(cgroup.HostBase(base), parent, rel)
			seen[dir] = true
			switch {
			case app.QoS == slov1alpha1.QoSBE:
				r.hostsKill[dir] = true
				hold = append(hold, executor.Update{Dir: dir, Value: executor.OOMScoreAdj(oomBestEffort),
					Reason: "runtime hook reconciler, host application " + app.Name + " of class BE"})
			case r.hostsKill[dir]:
				r.release(dir)
				err := r.d.Executor.Do(ctx, OwnerReconciler, executor.Update{Dir: dir, Value: executor.OOMScoreAdj(0),
					Reason: "runtime hook reconciler, host application " + app.Name + " is no longer of class BE"})
				if !errors.Is(err, fs.ErrNotExist) { // an application whose cgroup is gone has nothing to give back
					errs = append(errs, err)
				}
			}
		}
	}
	for dir := range r.hostsKill {
		if !seen[dir] {
			r.release(dir)
		}
	}
	if len(hold) > 0 {
		errs = append(errs, r.d.Executor.Apply(ctx, OwnerReconciler, hold...))
	}
	return errors.Join(errs...)
}

// release lets go of the oom_score_adj the reconciler holds for host application cgroup dir.
func (r *Reconciler) release(dir string) {
	delete(r.hostsKill, dir)
	r.d.Executor.Release(OwnerReconciler, executor.ResourceOOMScoreAdj, func(d string) bool { return d == dir })
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
