// Package agent assembles gleaner-agent, the per-node half of Gleaner: its Options (filled from flags once in
// cmd/gleaner-agent), the modules, and the order they run in.
//
// Modules, each a Runnable started in this order (a module that syncs is waited for before the next starts):
//
//  1. the HTTP servers: Prometheus /metrics, and /healthz and /readyz (ready once step 4 has synced);
//  2. the metric cache (pkg/agent/metriccache), whose garbage collection runs in the background;
//  3. the states informer (pkg/agent/statesinformer): Node, pods, NodeSLO and NodeMetric; waited for until synced;
//  4. the collectors (pkg/agent/collector); waited for until each has run once;
//  5. the NodeMetric reporter (pkg/agent/reporter).
//
// On shutdown every module's context ends at once and the agent waits for all of them, at most ShutdownTimeout.
// The QoS manager, prediction and the NRI hook of later issues join this list, reading the states informer and the
// metric cache and writing cgroups through pkg/agent/system/cgroup.
package agent
