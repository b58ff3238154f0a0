// Package nodeslo is the controller that keeps one NodeSLO per Node: its spec is the node's merged
// resource-threshold, resource-qos, cpu-burst, system and host-application strategies from the slo-controller-config
// ConfigMap (sloconfig.Snapshot.NodeSLOSpec), which gleaner-agent enforces.
package nodeslo
