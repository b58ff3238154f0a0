package slostatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodeslos/status,verbs=get;patch

// DefaultInterval is how often the writer compares the conditions with the NodeSLO's status. It writes only what
// changed, so a node whose features stay applied writes nothing after the first round.
const DefaultInterval = 10 * time.Second

// maxMessage bounds a condition's message: an error joined from many pods would make the object large.
const maxMessage = 1024

// QoS is what the QoS manager reports (*qosmanager.Manager implements it).
type QoS interface {
	// NodeSLOConditions returns one condition per enabled QoS plugin whose strategy the spec turns on, without
	// times, and the generation of the NodeSLO every plugin has run with at least once (0 when one has not run).
	NodeSLOConditions() ([]metav1.Condition, int64)
}

// Hook is what the runtime hook reports (*runtimehook.Status implements it).
type Hook interface {
	// NodeSLOCondition is the runtime hook's condition, without times; nil when the hook is off.
	NodeSLOCondition() *metav1.Condition
}

// Writer keeps the NodeSLO status of one node: the QoS plugins' and the runtime hook's conditions, and the
// NodeSLOApplied condition that sums them up. It is a Runnable.
type Writer struct {
	client   client.Client
	states   statesinformer.States
	qos      QoS
	hook     Hook
	clock    clock.WithTicker
	nodeName string
	interval time.Duration

	applied *prometheus.GaugeVec
	shown   map[string]bool // the condition label values the gauge has a series for
	failed  string          // the last write error logged
}

// New returns a writer for nodeName's NodeSLO, with its metric registered on reg. hook may be nil.
func New(c client.Client, states statesinformer.States, qos QoS, hook Hook, clk clock.WithTicker, reg prometheus.Registerer, nodeName string) (*Writer, error) {
	w := &Writer{
		client: c, states: states, qos: qos, hook: hook, clock: clk, nodeName: nodeName, interval: DefaultInterval,
		applied: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_nodeslo_applied",
			Help: "1 when the node applies the feature of its NodeSLO that the condition label names (a condition type of the NodeSLO's status; Applied sums up the others), 0 when it does not or not yet: kubectl get nodeslo says why.",
		}, []string{"condition"}),
		shown: map[string]bool{},
	}
	if err := reg.Register(w.applied); err != nil {
		return nil, fmt.Errorf("registering the NodeSLO status's metric: %w", err)
	}
	return w, nil
}

// Name is the writer's name as a Runnable.
func (w *Writer) Name() string { return "nodeslo-status" }

// Start writes the status every interval until ctx ends. It always returns nil: a failed write is logged, and the
// next round tries again.
func (w *Writer) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("node", w.nodeName)
	ctx = klog.NewContext(ctx, log)
	t := w.clock.NewTicker(w.interval)
	defer t.Stop()
	for {
		if err := w.Write(ctx); err != nil {
			if msg := err.Error(); msg != w.failed {
				w.failed = msg
				log.Error(err, "writing the NodeSLO status; trying again every interval", "interval", w.interval)
			}
		} else if w.failed != "" {
			w.failed = ""
			log.Info("the NodeSLO status is written again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Write brings the node's NodeSLO status up to date with the conditions reported now, and writes it when it
// differs from what the API server holds. Without a NodeSLO (gleaner-manager has not created it yet) there is
// nothing to write.
func (w *Writer) Write(ctx context.Context) error {
	slo := w.states.GetNodeSLO()
	if slo == nil {
		return nil
	}
	next := w.Build(slo.Status)
	w.export(next.Conditions)
	if apiequality.Semantic.DeepEqual(next, slo.Status) {
		return nil
	}
	// A merge patch of the whole status: the agent is its only writer, and the list of conditions is replaced.
	patch, err := json.Marshal(map[string]any{"status": next})
	if err != nil {
		return fmt.Errorf("encoding the status of NodeSLO %q: %w", slo.Name, err)
	}
	err = w.client.Status().Patch(ctx, &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: slo.Name}}, client.RawPatch(types.MergePatchType, patch))
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted since the informer saw it; the manager creates it again
	case err != nil:
		return fmt.Errorf("writing the status of NodeSLO %q: %w", slo.Name, err)
	}
	return nil
}

// Build returns the status the node's conditions make of current: a condition whose status did not change keeps
// its lastTransitionTime, one no longer reported (a feature turned off) is removed.
func (w *Writer) Build(current slov1alpha1.NodeSLOStatus) slov1alpha1.NodeSLOStatus {
	conds, generation := w.qos.NodeSLOConditions()
	if w.hook != nil {
		if c := w.hook.NodeSLOCondition(); c != nil {
			conds = append(conds, *c)
		}
	}
	conds = append([]metav1.Condition{summary(conds)}, conds...)
	now := metav1.NewTime(w.clock.Now())
	next := slov1alpha1.NodeSLOStatus{ObservedGeneration: generation}
	for _, c := range conds {
		c.ObservedGeneration = generation
		c.Message = truncate(c.Message)
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(current.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		next.Conditions = append(next.Conditions, c)
	}
	return next
}

// summary is NodeSLOApplied over conds: False naming every feature that is not applied, Unknown while one has
// not run yet, else True.
func summary(conds []metav1.Condition) metav1.Condition {
	var not, pending []string
	for _, c := range conds {
		switch c.Status {
		case metav1.ConditionFalse:
			not = append(not, c.Type+" ("+c.Reason+")")
		case metav1.ConditionUnknown:
			pending = append(pending, c.Type)
		}
	}
	switch {
	case len(not) > 0:
		return metav1.Condition{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonNotApplied,
			Message: "not applied on this node: " + strings.Join(not, ", ") + "; each condition says why"}
	case len(pending) > 0:
		return metav1.Condition{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionUnknown, Reason: slov1alpha1.NodeSLOReasonPending,
			Message: "the agent has not run yet: " + strings.Join(pending, ", ")}
	case len(conds) == 0:
		return metav1.Condition{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionTrue, Reason: slov1alpha1.NodeSLOReasonApplied,
			Message: "the NodeSLO turns no feature on"}
	}
	var names []string
	for _, c := range conds {
		names = append(names, c.Type)
	}
	return metav1.Condition{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionTrue, Reason: slov1alpha1.NodeSLOReasonApplied,
		Message: "applied: " + strings.Join(names, ", ")}
}

// export sets the gauge from conds and drops the series of conditions no longer there.
func (w *Writer) export(conds []metav1.Condition) {
	now := map[string]bool{}
	for _, c := range conds {
		v := 0.0
		if c.Status == metav1.ConditionTrue {
			v = 1
		}
		w.applied.WithLabelValues(c.Type).Set(v)
		now[c.Type] = true
	}
	for t := range w.shown {
		if !now[t] {
			w.applied.DeleteLabelValues(t)
		}
	}
	w.shown = now
}

// truncate cuts a message to maxMessage bytes on a rune boundary, saying so.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len(" (cut)")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " (cut)"
}

// Failure is the condition of a feature that err keeps from being applied: the reason says what kind of failure
// (the kernel refused a privilege, the host lacks the feature, anything else) and the message is the error.
func Failure(conditionType string, err error) metav1.Condition {
	reason := slov1alpha1.NodeSLOReasonFailed
	switch {
	case errors.Is(err, fs.ErrPermission):
		reason = slov1alpha1.NodeSLOReasonPermissionDenied
	case errors.Is(err, system.ErrUnsupported):
		reason = slov1alpha1.NodeSLOReasonUnsupported
	}
	return metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()}
}
