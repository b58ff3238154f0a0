// Package executor is the agent's one writer of cgroup values. QoS plugins, the runtime hook's reconciler and
// anything else that changes a cgroup describe the values they want (Update: a cgroup directory and a typed Value)
// and hand them to Executor.Apply; none opens a cgroup file itself.
//
// What the executor adds over writing the files directly:
//   - Order. The kernel checks a cgroup's value against its parent's and children's: on cgroup v1 a child's CFS
//     quota may not exceed its parent's, a cpuset must stay within its parent's, and a memory limit below the
//     usage of children fails. A batch is written loosening values first, parents before children, then
//     tightening values, children before parents; a CPU set that moves sideways is widened to the union first.
//   - Fewer writes. A value the executor wrote and still holds is not written again.
//   - Drift. Every Options.Resync every held value is written again, undoing changes made behind its back.
//   - A record. Every write goes into a bounded audit trail (Audit, AuditHandler), a log line at verbosity 4 and
//     gleaner_agent_executor_writes_total{resource,result}.
//   - Failure that stays local. One file that fails never stops the rest of a batch; a cgroup that no longer exists
//     is forgotten; a file this kernel lacks is said once and not asked for again.
package executor
