package evictor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// KillLocally is the last resort when the API server cannot be reached (Evict failed with ErrUnreachable) and memory
// stays above the eviction threshold: it kills every process of the pod through its cgroup podCgroupDir
// (cgroup.kill on cgroup v2, SIGKILL to each task on v1; see cgroup.FS.Kill), so the services on the node survive.
// The pod object stays: the kubelet sees its containers die and restarts them as their restartPolicy says, with
// its growing back-off, and the plugins kill again if the pressure returns. reason and message are as for Evict.
//
// The kill is kept as a Warning event (KilledLocally) that Start writes once the API server answers, with the time
// of the kill. Only best-effort and mid-tier pods are killed (else an error wrapping ErrProtected); a pod killed less than
// RetryAfter ago is not killed again (InProgress); the node's rate limit applies as for Evict (RateLimited); with
// Options.LocalKill off nothing is done (Disabled); in a dry run the kill is only reported (DryRun). A cgroup that is
// gone already is Gone.
func (e *Evictor) KillLocally(ctx context.Context, pod *corev1.Pod, podCgroupDir, reason, message string) (Result, error) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "reason", reason, "cgroup", podCgroupDir)
	if !slov1alpha1.ClassOf(pod).Evictable() {
		e.count(actionKill, reason, resultProtected)
		return "", fmt.Errorf("killing pod %s/%s locally: %w", pod.Namespace, pod.Name, ErrProtected)
	}
	if !e.opts.LocalKill {
		log.V(1).Info("local kill switched off: not killing the pod", "message", message)
		e.count(actionKill, reason, string(Disabled))
		return Disabled, nil
	}
	now := e.clock.Now()
	e.mu.Lock()
	st := e.state(pod.UID)
	if !st.killedAt.IsZero() && now.Before(st.killedAt.Add(e.opts.RetryAfter)) {
		e.mu.Unlock()
		return InProgress, nil
	}
	if !e.bucket.take(now) {
		e.mu.Unlock()
		log.V(1).Info("local kill deferred by the node's rate limit", "message", message)
		e.count(actionKill, reason, string(RateLimited))
		return RateLimited, nil
	}
	// Set before the kill, so a second caller does not kill the pod again meanwhile.
	st.killedAt = now
	e.mu.Unlock()

	if e.opts.DryRun {
		log.Info("dry run: would kill the pod's processes locally", "message", message)
		e.count(actionKill, reason, string(DryRun))
		e.record(ctx, pod, now, "WouldKillLocally", "Kill", fmt.Sprintf(
			"Dry run: gleaner-agent on node %s would have killed this pod's processes at %s, as the last resort while the API server could not be reached (%s): %s",
			e.opts.NodeName, now.UTC().Format(time.RFC3339), reason, message), false)
		return DryRun, nil
	}
	err := e.killer.Kill(podCgroupDir)
	if err != nil {
		e.mu.Lock()
		e.bucket.giveBack(e.clock.Now())
		st.killedAt = time.Time{}
		e.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) {
			log.V(1).Info("pod to kill is gone", "error", err)
			e.count(actionKill, reason, string(Gone))
			return Gone, nil
		}
		e.count(actionKill, reason, resultError)
		return "", fmt.Errorf("killing pod %s/%s locally: %w", pod.Namespace, pod.Name, err)
	}
	log.Info("killed the pod's processes locally: the API server cannot be reached", "message", message)
	e.count(actionKill, reason, string(Killed))
	e.record(ctx, pod, now, "KilledLocally", "Kill", fmt.Sprintf(
		"gleaner-agent on node %s killed this pod's processes at %s, as the last resort while the API server could not be reached (%s): %s",
		e.opts.NodeName, now.UTC().Format(time.RFC3339), reason, message), false)
	return Killed, nil
}
