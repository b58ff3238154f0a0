// Package nrt is the part of the community NodeResourceTopology API (topology.node.k8s.io/v1alpha2) that Gleaner
// reads and writes: gleaner-agent publishes each node's NUMA zones in it, and gleaner-manager's node-resource
// framework splits batch resources per zone from it. Both handle it as an unstructured object, so Gleaner needs
// no Go module of that API and a cluster without its CRD costs nothing.
//
// It sits below both binaries (it imports only apimachinery), so the agent does not import the manager's
// controllers to speak it.
package nrt
