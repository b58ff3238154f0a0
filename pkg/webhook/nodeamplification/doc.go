// Package nodeamplification is gleaner-manager's mutating webhook of Node status updates that amplifies a node's
// allocatable cpu and memory by the ratios of its node.koordinator.sh/resource-amplification-ratio annotation (set
// by the resourceamplification node-resource plugin), keeping the kubelet's own values in
// node.koordinator.sh/raw-allocatable. A webhook rather than a controller: the kubelet writes its allocatable back
// at every status update, and a controller would make the value flap between the two; the webhook amplifies it in
// the same write. docs/qos.md#cpu-normalization-and-resource-amplification says how it behaves.
package nodeamplification
