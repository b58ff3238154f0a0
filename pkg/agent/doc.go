// Package agent assembles gleaner-agent, the per-node half of Gleaner: its Options (filled from flags once in
// cmd/gleaner-agent), the modules, and the order they run in.
//
// The modules, each in a package of its own below this one: collector (the metric collectors, in rounds), events (the
// event writer every plugin records through), evictor,
// executor (the resource executor, the one writer of cgroup values), metriccache, prediction (peak prediction),
// qosmanager (the QoS manager and its plugins), reporter (the NodeMetric reporter), runtimehook (the NRI plugin and
// its reconciler) and statesinformer; the HTTP servers are here (server.go). Each is a Runnable (runnable.go); they
// start one after another, a module that syncs (Syncer) waited for before the next starts, in the order modules
// (agent.go) builds. That order is described in one place, docs/agent.md's "Start-up order", by the names the
// modules log under; TestStartOrderIsDocumented fails when the agent's modules and that list differ.
//
// On shutdown every module's context ends at once and the agent waits for all of them, at most ShutdownTimeout.
package agent
