package events

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

const (
	// Component names the agent in events' source and reporting controller.
	Component = "gleaner-agent"
	// RetryInterval is how often Start retries the kept events.
	RetryInterval = 10 * time.Second
	// maxPending bounds the events kept while the API server cannot be reached; the oldest go first.
	maxPending = 128
	// writeTimeout bounds one event write, so a plugin round does not hang on an API server that went away.
	writeTimeout = 5 * time.Second
	// maxMessage is the longest message the Events APIs accept (events.k8s.io limits its note to 1 KiB).
	maxMessage = 1024
	// maxNameLength is the longest object name (a DNS subdomain).
	maxNameLength = 253
)

// Writer writes the agent's events. It is safe for concurrent use, and it is the agent's Runnable that retries the
// events the API server did not take.
type Writer struct {
	client   client.Client
	clock    clock.WithTicker
	nodeName string

	// flushMu makes one ReportPending at a time, so an event is never written twice.
	flushMu sync.Mutex
	mu      sync.Mutex
	// pending are the events not written yet, oldest first.
	pending []*corev1.Event
	// lastNanos is the timestamp in the last event's name: names stay unique when the clock stands still.
	lastNanos int64
}

// New returns a Writer that writes with c, as the agent of node nodeName, events timed by clk.
func New(c client.Client, clk clock.WithTicker, nodeName string) *Writer {
	return &Writer{client: c, clock: clk, nodeName: nodeName}
}

// Name implements the agent's Runnable.
func (w *Writer) Name() string { return "events" }

// Start writes the events that could not be written when they happened (above all those of the evictor's local
// last resort, which runs while the API server cannot be reached), every RetryInterval until ctx ends. It returns
// nil.
func (w *Writer) Start(ctx context.Context) error {
	t := w.clock.NewTicker(RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := w.ReportPending(ctx); err != nil {
				klog.FromContext(ctx).V(2).Info("events still not written", "pending", w.Pending(), "error", err)
			}
		}
	}
}

// ReportPending writes the kept events, oldest first, and stops at the first that fails, returning its error.
func (w *Writer) ReportPending(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.mu.Unlock()
			return nil
		}
		ev := w.pending[0]
		w.mu.Unlock()
		// An event whose earlier create timed out may have been written after all: its name says so.
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := w.client.Create(wctx, ev.DeepCopy())
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		w.mu.Lock()
		if len(w.pending) > 0 && w.pending[0] == ev { // unless dropped for room meanwhile
			w.pending = w.pending[1:]
		}
		w.mu.Unlock()
	}
}

// Pending is the number of events waiting to be written.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// Eventf records an event on obj (a Pod or a NodeSLO; any other kind is logged as a bug and dropped), written at
// once or, when the API server does not answer, kept and written by Start. It implements the QoS manager's
// EventRecorder.
func (w *Writer) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	var ref corev1.ObjectReference
	switch o := obj.(type) {
	case *corev1.Pod:
		ref = PodRef(o)
	case *slov1alpha1.NodeSLO:
		ref = corev1.ObjectReference{Kind: "NodeSLO", APIVersion: slov1alpha1.GroupVersion.String(), Name: o.Name, UID: o.UID}
	default:
		klog.Background().Error(nil, "no event for an object of this kind", "kind", fmt.Sprintf("%T", obj), "reason", reason)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	w.Record(ctx, ref, eventtype, w.clock.Now(), reason, "", fmt.Sprintf(messageFmt, args...), true)
}

// PodRef is the reference of an event on pod.
func PodRef(pod *corev1.Pod) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// Record writes an event on the object ref names, of what happened at at (action: what the agent did, "" for
// nothing), or keeps it for later when it cannot be written now. Without writeNow it only keeps it, for Start (or
// the next event) to write: what the evictor's local last resort reports is written once the API server is back.
// Events of cluster-scoped objects go to the default namespace; a message longer than the API takes is cut.
func (w *Writer) Record(ctx context.Context, ref corev1.ObjectReference, eventtype string, at time.Time, reason, action, message string, writeNow bool) {
	if len(message) > maxMessage {
		message = message[:maxMessage-3] + "..."
	}
	w.mu.Lock()
	nanos := max(at.UnixNano(), w.lastNanos+1)
	w.lastNanos = nanos
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
		Source:         corev1.EventSource{Component: Component, Host: w.nodeName},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
		Action: action, ReportingController: "gleaner.sh/" + Component, ReportingInstance: Component + "-" + w.nodeName,
	}
	if len(w.pending) == maxPending {
		klog.FromContext(ctx).Info("dropping the oldest unwritten event to keep the queue bounded",
			"reason", w.pending[0].Reason, "pod", w.pending[0].InvolvedObject.Name, "message", w.pending[0].Message)
		w.pending = w.pending[1:]
	}
	w.pending = append(w.pending, ev)
	w.mu.Unlock()
	if !writeNow {
		return
	}
	if err := w.ReportPending(ctx); err != nil {
		klog.FromContext(ctx).V(1).Info("event kept until the API server answers", "reason", reason, "object", ref.Kind+" "+ref.Namespace+"/"+ref.Name, "error", err)
	}
}
