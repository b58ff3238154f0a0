// Package qosmanager is the agent's QoS manager (the counterpart of Koordinator's koordlet QoS manager): plugins that protect the node's services from its
// best-effort pods, each in its own package under plugins/, registered by name and run on its own interval.
//
// The Manager resolves what each plugin enforces from the node's NodeSLO: the spec with the API's defaults filled in
// (slov1alpha1.NodeSLOSpec.WithDefaults). A plugin that validates (ValidatingPlugin) may refuse a NodeSLO; it then
// keeps enforcing the last one it accepted, and the refusal is logged and recorded as a Warning event on the
// NodeSLO. When the API server cannot be reached, the states informer keeps the last NodeSLO it saw, so plugins
// keep enforcing it.
//
// Plugins never write a cgroup file themselves: they hand values to the resource executor (pkg/agent/executor),
// and evict through the evictor (Deps.Evictor), which goes through the Eviction API.
package qosmanager
