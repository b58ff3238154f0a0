// Package evictor evicts best-effort and mid-tier pods of one node for gleaner-agent's QoS plugins (memory and
// CPU-satisfaction eviction), the only way the agent ever removes a pod.
//
// The plugins decide which pod should go and why; the Evictor decides whether it may go now and does it:
//
//   - only best-effort and mid-tier pods (slov1alpha1.PodClass.Evictable): asking for anything else is an error that
//     touches nothing;
//   - through the Eviction API (policy/v1), so PodDisruptionBudgets hold: a refusal (HTTP 429) is remembered and
//     the pod is not asked for again before Options.RetryAfter, and never forced;
//   - at most Options.Burst at once and Options.RatePerMinute after that on this node (a token bucket on the
//     injected clock); a refused or failed request gives its token back;
//   - once per pod: a pod whose eviction was accepted, or that is terminating already, is not evicted again (Prune
//     forgets the pods that are gone);
//   - with a Warning event on the pod and a count in gleaner_agent_evictions_total{action,reason,result};
//   - or, with Options.DryRun, only reported: logged, an event, the counter with result "dry_run".
//
// KillLocally is the last resort for memory pressure while the API server cannot be reached (Evict's error wraps
// ErrUnreachable): it kills the pod's processes through its cgroup, and writes the Warning event that
// says so once the API server answers again. Options.LocalKill switches it off.
//
// The events go through the agent's event writer (pkg/agent/events), which keeps those it cannot write yet.
package evictor
