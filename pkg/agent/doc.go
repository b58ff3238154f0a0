// Package agent assembles gleaner-agent, the per-node half of Gleaner: its Options (filled from flags once in
// cmd/gleaner-agent), the modules, and the order they run in.
//
// Modules, each a Runnable started in this order (a module that syncs is waited for before the next starts):
//
//  1. the HTTP servers: Prometheus /metrics (with /debug/executor and /debug/runtimehook), and /healthz and
//     /readyz (ready once every module has started and synced);
//  2. the metric cache (pkg/agent/metriccache), whose garbage collection runs in the background;
//  3. the states informer (pkg/agent/statesinformer): Node, pods, NodeSLO and NodeMetric; waited for until synced;
//  4. the resource executor (pkg/agent/executor), the one writer of cgroup values;
//  5. the runtime hook (pkg/agent/runtimehook): the NRI plugin, then its reconciler, which give batch and mid pods
//     their cgroup limits;
//  6. the collectors (pkg/agent/collector); waited for until each has run once;
//  7. the event writer (pkg/agent/events), the QoS manager and its plugins (pkg/agent/qosmanager);
//  8. the NodeMetric reporter (pkg/agent/reporter).
//
// On shutdown every module's context ends at once and the agent waits for all of them, at most ShutdownTimeout.
package agent
