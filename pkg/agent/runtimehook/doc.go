// Package runtimehook gives batch and mid pods their cgroup limits. To the kubelet a pod that requests only
// kubernetes.io/batch-cpu and batch-memory is BestEffort: its cgroups get the minimum CPU weight, no CFS quota and
// no memory limit. The hook sets what the kubelet would have set had those been native resources (tier.Translate):
//
//   - at the source, as an NRI plugin (NRI) inside gleaner-agent: containerd asks it at RunPodSandbox,
//     CreateContainer, StartContainer and UpdateContainer, and it answers with the Linux resources of the container
//     being created (the pod's own cgroup exists before the sandbox, so it is written through the executor then; on
//     cgroup v1 so is a container's CFS quota, at StartContainer, never by runc);
//   - as a fallback, a Reconciler that walks the node's pods every --runtime-reconcile-interval and writes the
//     same values through the resource executor: where NRI is missing, while the plugin is disconnected, and for
//     pods that started while the agent was down.
//
// What is set comes from a Registry of features (feature.go is the contract, features.go the list), asked at each
// Stage; the NRI plugin and the reconciler only deliver their values.
//
// The hook fails open: an error, a pod the agent does not know yet or a slow answer means no adjustment, never a
// container that does not start. Status tells which of the two is active; docs/runtime-hook.md explains it all.
package runtimehook
