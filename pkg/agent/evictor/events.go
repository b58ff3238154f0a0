package evictor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

const (
	// component names the agent in events' source and reporting controller.
	component = "gleaner-agent"
	// maxPendingEvents bounds the events kept while the API server cannot be reached; the oldest go first.
	maxPendingEvents = 128
	// eventRetryInterval is how often Start retries the kept events.
	eventRetryInterval = 10 * time.Second
	// eventWriteTimeout bounds one event write, so a plugin round does not hang on an API server that went away.
	eventWriteTimeout = 5 * time.Second
	// maxEventMessage is the longest message the Events APIs accept (events.k8s.io limits its note to 1 KiB).
	maxEventMessage = 1024
	// maxNameLength is the longest object name (a DNS subdomain).
	maxNameLength = 253
)

// eventQueue holds the events not written yet, oldest first. Evictor.mu guards it.
type eventQueue struct {
	pending []*corev1.Event
	// lastNanos is the timestamp in the last event's name: names stay unique when the clock stands still.
	lastNanos int64
}

// Name implements the agent's Runnable.
func (e *Evictor) Name() string { return "evictor" }

// Start writes the events that could not be written when they happened (above all those of KillLocally, which runs
// while the API server cannot be reached), every 10 s until ctx ends. It returns nil.
func (e *Evictor) Start(ctx context.Context) error {
	t := e.clock.NewTicker(eventRetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := e.ReportPending(ctx); err != nil {
				klog.FromContext(ctx).V(2).Info("events still not written", "pending", e.Pending(), "error", err)
			}
		}
	}
}

// ReportPending writes the kept events, oldest first, and stops at the first that fails, returning its error.
func (e *Evictor) ReportPending(ctx context.Context) error {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	for {
		e.mu.Lock()
		if len(e.events.pending) == 0 {
			e.mu.Unlock()
			return nil
		}
		ev := e.events.pending[0]
		e.mu.Unlock()
		// An event whose earlier create timed out may have been written after all: its name says so.
		wctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
		err := e.client.Create(wctx, ev.DeepCopy())
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		e.mu.Lock()
		if len(e.events.pending) > 0 && e.events.pending[0] == ev { // unless dropped for room meanwhile
			e.events.pending = e.events.pending[1:]
		}
		e.mu.Unlock()
	}
}

// Pending is the number of events waiting to be written.
func (e *Evictor) Pending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.events.pending)
}

// Eventf records an event on obj (a Pod or a NodeSLO), written at once or, when the API server does not answer,
// kept and written by Start. The QoS manager reports refused NodeSLOs through it: the agent has one event writer,
// the one that must also work while the API server is away.
func (e *Evictor) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	var ref corev1.ObjectReference
	switch o := obj.(type) {
	case *corev1.Pod:
		ref = corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: o.Namespace, Name: o.Name, UID: o.UID}
	case *slov1alpha1.NodeSLO:
		ref = corev1.ObjectReference{Kind: "NodeSLO", APIVersion: slov1alpha1.GroupVersion.String(), Name: o.Name, UID: o.UID}
	default:
		klog.Background().Error(nil, "no event for an object of this kind", "kind", fmt.Sprintf("%T", obj), "reason", reason)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventWriteTimeout)
	defer cancel()
	e.recordRef(ctx, ref, eventtype, e.clock.Now(), reason, "", fmt.Sprintf(messageFmt, args...), true)
}

// record writes a Warning event on pod, or keeps it for later when it cannot be written now. Without writeNow it
// only keeps it, for Start to write: what KillLocally reports is written once the API server is back.
func (e *Evictor) record(ctx context.Context, pod *corev1.Pod, at time.Time, reason, action, message string, writeNow bool) {
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	e.recordRef(ctx, ref, corev1.EventTypeWarning, at, reason, action, message, writeNow)
}

// recordRef writes an event on the object ref names; events of cluster-scoped objects go to the default namespace.
func (e *Evictor) recordRef(ctx context.Context, ref corev1.ObjectReference, eventtype string, at time.Time, reason, action, message string, writeNow bool) {
	if len(message) > maxEventMessage {
		message = message[:maxEventMessage-3] + "..."
	}
	e.mu.Lock()
	nanos := max(at.UnixNano(), e.events.lastNanos+1)
	e.events.lastNanos = nanos
	suffix := "." + strconv.FormatInt(nanos, 16)
	name := ref.Name
	if len(name)+len(suffix) > maxNameLength {
		name = name[:maxNameLength-len(suffix)]
	}
	ts := metav1.NewTime(at)
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + suffix, Namespace: namespace},
		InvolvedObject: ref,
		Reason:         reason, Message: message, Type: eventtype,
		Source:         corev1.EventSource{Component: component, Host: e.opts.NodeName},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
		Action: action, ReportingController: "gleaner.sh/" + component, ReportingInstance: component + "-" + e.opts.NodeName,
	}
	if len(e.events.pending) == maxPendingEvents {
		klog.FromContext(ctx).Info("dropping the oldest unwritten event to keep the queue bounded",
			"reason", e.events.pending[0].Reason, "pod", e.events.pending[0].InvolvedObject.Name, "message", e.events.pending[0].Message)
		e.events.pending = e.events.pending[1:]
	}
	e.events.pending = append(e.events.pending, ev)
	e.mu.Unlock()
	if !writeNow {
		return
	}
	if err := e.ReportPending(ctx); err != nil {
		klog.FromContext(ctx).V(1).Info("event kept until the API server answers", "reason", reason, "object", ref.Kind+" "+ref.Namespace+"/"+ref.Name, "error", err)
	}
}
