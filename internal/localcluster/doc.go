// Package localcluster runs a real single-node Kubernetes cluster on this machine: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd (with NRI and runc) and a kubelet, with real pods in real
// cgroup v1 directories. It is what `make run`, hack/gleaner-local and the e2e suite (test/e2e) stand on.
//
// Everything the cluster writes lives in one state directory (see Layout): configuration, certificates, logs, the
// etcd data, containerd's root, the kubelet's root and a record of the processes it started (cluster.json). The
// exceptions are the few host paths the kubelet and the CNI plugins hard-code (/var/lib/kubelet/device-plugins,
// /var/log/containers, /var/run/nri, /var/run/netns) and the kubepods cgroup trees; Down removes those too, and
// only when they were not there before Up. The cluster adds no firewall rule (firewall.go); Down removes any
// Kubernetes or CNI chain a component added anyway.
//
// Every port is bound to 127.0.0.1. Pods on the CNI bridge cannot reach the API server there, so Gleaner's own
// pods run with the host network in the local overlay (config/local).
//
// Only one cluster can run on a machine at a time: the ports, the kubepods cgroups and the kubelet's hard-coded
// paths are machine-wide. Up says so when one is already running.
package localcluster
