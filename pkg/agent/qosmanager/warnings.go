package qosmanager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Warnings says that pods' annotations cannot be used (Warn), or are used only in part (Partly), once per pod and
// value: a log line and a Warning event on the pod. A plugin keeps one per annotation it reads and event reason. It is not safe for concurrent use (a plugin's Run never runs
// concurrently with itself).
type Warnings struct {
	events EventRecorder // nil: the log line only
	reason string
	said   map[types.UID]string // the value last warned about, per pod
}

// NewWarnings returns Warnings whose events have reason; events may be nil.
func NewWarnings(events EventRecorder, reason string) *Warnings {
	return &Warnings{events: events, reason: reason, said: map[types.UID]string{}}
}

// Warn says err, about value of one of pod's annotations, and what applies instead, unless it already said so for
// this pod and value.
func (w *Warnings) Warn(ctx context.Context, pod *corev1.Pod, value string, err error, instead string) {
	if !w.first(pod, value) {
		return
	}
	klog.FromContext(ctx).Info("ignoring a pod's annotation", "pod", klog.KObj(pod), "err", err.Error(), "instead", instead)
	if w.events != nil {
		w.events.Eventf(pod, corev1.EventTypeWarning, w.reason, "%v; %s", err, instead)
	}
}

// Partly says msg, which names what of value (one of pod's annotations, otherwise used) was left out, unless it
// already said so for this pod and value; an empty msg is Fine.
func (w *Warnings) Partly(ctx context.Context, pod *corev1.Pod, value, msg string) {
	if msg == "" {
		w.Fine(pod)
		return
	}
	if !w.first(pod, value) {
		return
	}
	klog.FromContext(ctx).Info("using part of a pod's annotation", "pod", klog.KObj(pod), "left out", msg)
	if w.events != nil {
		w.events.Eventf(pod, corev1.EventTypeWarning, w.reason, "%s; the rest of the value applies", msg)
	}
}

// first reports whether value is new for pod, and remembers it.
func (w *Warnings) first(pod *corev1.Pod, value string) bool {
	if v, ok := w.said[pod.UID]; ok && v == value {
		return false
	}
	w.said[pod.UID] = value
	return true
}

// Fine forgets what was said about pod, whose annotation is usable again (a new bad value is said again).
func (w *Warnings) Fine(pod *corev1.Pod) { delete(w.said, pod.UID) }

// Prune forgets the pods for which keep is false (those that left the node).
func (w *Warnings) Prune(keep func(types.UID) bool) {
	for uid := range w.said {
		if !keep(uid) {
			delete(w.said, uid)
		}
	}
}
