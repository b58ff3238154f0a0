package cgroup

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/util/qos"
)

// Driver is the kubelet's cgroup driver, which decides how it names cgroup directories.
type Driver string

// The cgroup drivers.
const (
	// Systemd names directories as systemd units: kubepods.slice/kubepods-burstable.slice/
	// kubepods-burstable-pod<uid with _>.slice/<runtime>-<id>.scope.
	Systemd Driver = "systemd"
	// Cgroupfs names them as plain paths: kubepods/burstable/pod<uid>/<id>.
	Cgroupfs Driver = "cgroupfs"
)

// DetectDriver tells the kubelet's cgroup driver from the kubepods directory it created under parent: the
// hierarchy root on v2, the cpu subsystem on v1. kubepods.slice means Systemd, kubepods Cgroupfs; neither (no
// kubelet has run here yet, or parent is wrong) is an error that says so.
func DetectDriver(root string, v Version, parent string) (Driver, error) {
	base := path.Join(root, parent)
	if v == V1 {
		base = path.Join(root, "cpu", parent)
	}
	switch {
	case exists(path.Join(base, "kubepods.slice")):
		return Systemd, nil
	case exists(path.Join(base, "kubepods")):
		return Cgroupfs, nil
	}
	return "", fmt.Errorf("detecting the cgroup driver: neither kubepods.slice nor kubepods exists in %s (is the kubelet running, and is its --cgroup-root %q?); set the driver explicitly", base, "/"+parent)
}

// Layout formats the cgroup directories the kubelet creates, relative to the hierarchy root, for a driver.
type Layout struct {
	// Driver is the kubelet's cgroup driver.
	Driver Driver
	// Parent is the kubelet's --cgroup-root relative to the hierarchy root, "" for the default "/". It is also the
	// directory host applications' CgroupRoot base points at. Tests point it at a private directory.
	Parent string
}

// Kubepods is the directory holding every pod: kubepods.slice (systemd) or kubepods (cgroupfs).
func (l Layout) Kubepods() string {
	if l.Driver == Systemd {
		return path.Join(l.Parent, "kubepods.slice")
	}
	return path.Join(l.Parent, "kubepods")
}

// QoSDir is the directory of a Kubernetes QoS class: Kubepods itself for Guaranteed, a burstable or besteffort
// child for the others.
func (l Layout) QoSDir(c corev1.PodQOSClass) string {
	var class string
	switch c {
	case corev1.PodQOSBurstable:
		class = "burstable"
	case corev1.PodQOSBestEffort:
		class = "besteffort"
	default:
		return l.Kubepods()
	}
	if l.Driver == Systemd {
		return path.Join(l.Kubepods(), "kubepods-"+class+".slice")
	}
	return path.Join(l.Kubepods(), class)
}

// PodDir is the directory of a pod, from its Kubernetes QoS class (status.qosClass, else computed from its
// resources) and UID.
func (l Layout) PodDir(pod *corev1.Pod) string { return l.PodDirOf(qos.GetPodQOS(pod), PodUID(pod)) }

// mirrorAnnotation is where the API server's copy of a static pod (a mirror pod, with a UID of its own) carries the
// UID the kubelet gave the pod, and named its cgroup after.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// PodUID is the UID the kubelet names pod's cgroup after: the pod's own, or for the mirror of a static pod the
// one in its kubernetes.io/config.mirror annotation.
func PodUID(pod *corev1.Pod) types.UID {
	if uid := pod.Annotations[mirrorAnnotation]; uid != "" {
		return types.UID(uid)
	}
	return pod.UID
}

// PodDirOf is the directory of the pod with QoS class c and UID uid.
func (l Layout) PodDirOf(c corev1.PodQOSClass, uid types.UID) string {
	if l.Driver != Systemd {
		return path.Join(l.QoSDir(c), "pod"+string(uid))
	}
	// systemd: the slice name repeats its parents' names, and "-" separates levels, so the UID's dashes become "_".
	prefix := "kubepods-"
	switch c {
	case corev1.PodQOSBurstable:
		prefix = "kubepods-burstable-"
	case corev1.PodQOSBestEffort:
		prefix = "kubepods-besteffort-"
	}
	return path.Join(l.QoSDir(c), prefix+"pod"+strings.ReplaceAll(string(uid), "-", "_")+".slice")
}

// ContainerDir is the directory of a container in podDir, from its status containerID ("<runtime>://<id>").
// The runtime decides the name: containerd and docker use the bare ID with cgroupfs and cri-containerd-<id>.scope /
// docker-<id>.scope with systemd; CRI-O uses crio-<id> and crio-<id>.scope. An empty or unknown ID is an error
// (the container has not started, or a runtime this agent does not know).
func (l Layout) ContainerDir(podDir, containerID string) (string, error) {
	runtime, id, ok := strings.Cut(containerID, "://")
	if !ok || id == "" {
		return "", fmt.Errorf("container ID %q is not <runtime>://<id>", containerID)
	}
	var prefix string
	switch runtime {
	case "containerd":
		prefix = "cri-containerd-"
	case "cri-o":
		prefix = "crio-"
	case "docker":
		prefix = "docker-"
	default:
		return "", fmt.Errorf("container ID %q: unknown runtime %q (known: containerd, cri-o, docker)", containerID, runtime)
	}
	switch {
	case l.Driver == Systemd:
		return path.Join(podDir, prefix+id+".scope"), nil
	case runtime == "cri-o":
		return path.Join(podDir, prefix+id), nil
	default:
		return path.Join(podDir, id), nil
	}
}

// HostBase is a directory of the kubelet's hierarchy that a cgroup outside any pod is placed under. The values are
// those of a NodeSLO host application's cgroupPath.base, so that field converts directly.
type HostBase string

// The bases of a host cgroup.
const (
	// HostBaseRoot is the kubelet's --cgroup-root (Layout.Parent); the empty value means it too.
	HostBaseRoot HostBase = "CgroupRoot"
	// HostBaseKubepods is the directory holding every pod.
	HostBaseKubepods HostBase = "Kubepods"
	// HostBaseBurstable is the burstable QoS class directory.
	HostBaseBurstable HostBase = "KubepodsBurstable"
	// HostBaseBestEffort is the besteffort QoS class directory.
	HostBaseBestEffort HostBase = "KubepodsBesteffort"
)

// HostDir is the directory base/parentDir/relativePath of a cgroup that no pod owns, such as a host application's.
// An unknown base is the root. The path is cleaned, so ".." cannot lead above the hierarchy root.
func (l Layout) HostDir(base HostBase, parentDir, relativePath string) string {
	dir := l.Parent
	switch base {
	case HostBaseKubepods:
		dir = l.Kubepods()
	case HostBaseBurstable:
		dir = l.QoSDir(corev1.PodQOSBurstable)
	case HostBaseBestEffort:
		dir = l.QoSDir(corev1.PodQOSBestEffort)
	}
	return strings.TrimPrefix(path.Join("/", dir, parentDir, relativePath), "/")
}
