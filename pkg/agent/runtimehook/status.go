package runtimehook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/slostatus"
)

// Mode is the way the hook gives batch and mid pods their values at the moment.
type Mode string

// The modes, the values of the mode label of gleaner_agent_runtime_hook_mode.
const (
	// ModeNRI: the NRI plugin is connected; containers get their values as they are created, and the reconciler
	// runs behind it for pods that started while it was not.
	ModeNRI Mode = "nri"
	// ModeReconciler: only the reconciler, because NRI is switched off (--runtime-hook=reconciler) or the plugin
	// is not connected (no socket, a runtime without NRI, the runtime restarting). New containers run without
	// their values until the next round, at most --runtime-reconcile-interval.
	ModeReconciler Mode = "reconciler"
	// ModeOff: the hook is switched off (--runtime-hook=off); batch and mid pods keep the kubelet's values.
	ModeOff Mode = "off"
)

// Results of one NRI request, the values of the result label of gleaner_agent_runtime_hook_nri_requests_total.
// Every result but ResultAdjusted and ResultSkipped is a fail-open: the container is created without adjustments
// and the reconciler sets its values later.
const (
	// ResultAdjusted: the pod is a batch or mid pod and the hook set its values.
	ResultAdjusted = "adjusted"
	// ResultSkipped: the pod asks for no batch or mid resources; nothing to do.
	ResultSkipped = "skipped"
	// ResultPodUnknown: the agent did not know the pod within the wait (its watch lags, or the API server is away).
	ResultPodUnknown = "pod_unknown"
	// ResultContainerUnknown: the pod is known but has no container of that name (a spec the agent has not seen).
	ResultContainerUnknown = "container_unknown"
	// ResultError: writing the pod cgroup through the executor failed, or the handler panicked.
	ResultError = "error"
)

// Status is the hook's state for people and metrics: the mode (logged on every change, exported as
// gleaner_agent_runtime_hook_mode, served as JSON by Handler at /debug/runtimehook), the NRI connection and the
// reconciler's last round, with the counters of both.
type Status struct {
	clock clock.PassiveClock

	modeGauge   *prometheus.GaugeVec
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	connections *prometheus.CounterVec
	podsGauge   prometheus.Gauge
	rounds      *prometheus.CounterVec

	mu sync.Mutex
	s  StatusInfo
	// tried is whether the NRI plugin has tried to connect at least once.
	tried bool
	// roundErr is the error of the reconciler's last round, nil when it went through.
	roundErr error
}

// StatusInfo is what Handler serves.
type StatusInfo struct {
	// Configured is the --runtime-hook setting.
	Configured string `json:"configured"`
	// Mode is the mode in force.
	Mode Mode `json:"mode"`
	// Since is when the mode last changed.
	Since time.Time `json:"since"`
	// NRISocket is the socket the plugin connects to; empty when NRI is off.
	NRISocket string `json:"nriSocket,omitempty"`
	// Runtime is the runtime's name and version as it told the plugin, while connected.
	Runtime string `json:"runtime,omitempty"`
	// LastNRIError is why the plugin last failed to connect or lost its connection.
	LastNRIError string `json:"lastNRIError,omitempty"`
	// Connects counts the plugin's successful connections since the agent started.
	Connects int `json:"connects"`
	// LastReconcile is when the reconciler last walked the pods.
	LastReconcile time.Time `json:"lastReconcile,omitzero"`
	// ReconciledPods is how many batch and mid pods that round found.
	ReconciledPods int `json:"reconciledPods"`
	// LastReconcileError is the error of the last round that had one.
	LastReconcileError string `json:"lastReconcileError,omitempty"`
}

// NewStatus returns the status of a hook configured as configured (nri, reconciler or off), with its metrics
// registered on reg. It starts in ModeReconciler unless the hook is off: the NRI plugin says when it connects.
func NewStatus(configured string, nriSocket string, reg prometheus.Registerer, clk clock.PassiveClock) (*Status, error) {
	s := &Status{
		clock: clk,
		modeGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_runtime_hook_mode",
			Help: "1 for the way the runtime hook gives batch and mid pods their cgroup values now (nri: at container creation; reconciler: every --runtime-reconcile-interval only; off), 0 for the others.",
		}, []string{"mode"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_runtime_hook_nri_requests_total",
			Help: "NRI requests the runtime hook answered, by event and result (adjusted, skipped: not a batch/mid pod; pod_unknown, container_unknown, error: failed open, the container started without adjustments).",
		}, []string{"event", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gleaner_agent_runtime_hook_nri_duration_seconds",
			Help:    "Time the runtime hook took to answer an NRI request, by event: what it adds to a container's start.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 2},
		}, []string{"event"}),
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_runtime_hook_nri_connections_total",
			Help: "Attempts of the runtime hook's NRI plugin to connect to the runtime, by result (connected, failed).",
		}, []string{"result"}),
		podsGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gleaner_agent_runtime_hook_reconciled_pods",
			Help: "Batch and mid pods the runtime hook's reconciler found in its last round.",
		}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_runtime_hook_reconcile_rounds_total",
			Help: "Rounds of the runtime hook's reconciler, by result (ok, error: some value could not be written; the next round tries again).",
		}, []string{"result"}),
		s: StatusInfo{Configured: configured, Mode: ModeReconciler, Since: clk.Now(), NRISocket: nriSocket},
	}
	if configured == string(ModeOff) {
		s.s.Mode, s.s.NRISocket = ModeOff, ""
	}
	for _, c := range []prometheus.Collector{s.modeGauge, s.requests, s.duration, s.connections, s.podsGauge, s.rounds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the runtime hook's metrics: %w", err)
		}
	}
	s.setGauge(s.s.Mode)
	return s, nil
}

// Mode returns the mode in force.
func (s *Status) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s.Mode
}

// Info returns a copy of the status.
func (s *Status) Info() StatusInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s
}

func (s *Status) setGauge(m Mode) {
	for _, mode := range []Mode{ModeNRI, ModeReconciler, ModeOff} {
		v := 0.0
		if mode == m {
			v = 1
		}
		s.modeGauge.WithLabelValues(string(mode)).Set(v)
	}
}

// connected records that the NRI plugin is registered with runtime (name and version).
func (s *Status) connected(ctx context.Context, runtime string) {
	s.connections.WithLabelValues("connected").Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried = true
	s.s.Connects++
	s.s.Runtime = runtime
	s.setMode(ctx, ModeNRI, "the NRI plugin is connected to "+s.s.NRISocket)
}

// disconnected records that the NRI plugin failed to connect (wasConnected false) or lost its connection.
func (s *Status) disconnected(ctx context.Context, err error, wasConnected bool) {
	if !wasConnected {
		s.connections.WithLabelValues("failed").Inc()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried = true
	s.s.Runtime = ""
	if err != nil {
		s.s.LastNRIError = err.Error()
	}
	s.setMode(ctx, ModeReconciler, "the NRI plugin is not connected: "+s.s.LastNRIError)
}

// setMode logs and exports a change of mode; s.mu is held.
func (s *Status) setMode(ctx context.Context, m Mode, why string) {
	if s.s.Mode == m {
		return
	}
	klog.FromContext(ctx).Info("runtime hook mode changed", "from", s.s.Mode, "mode", m, "reason", why)
	s.s.Mode, s.s.Since = m, s.clock.Now()
	s.setGauge(m)
}

// request counts one answered NRI request.
func (s *Status) request(event, result string, took time.Duration) {
	s.requests.WithLabelValues(event, result).Inc()
	s.duration.WithLabelValues(event).Observe(took.Seconds())
}

// reconciled records one round of the reconciler.
func (s *Status) reconciled(pods int, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.rounds.WithLabelValues(result).Inc()
	s.podsGauge.Set(float64(pods))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.s.LastReconcile, s.s.ReconciledPods = s.clock.Now(), pods
	s.roundErr = err
	if err != nil {
		s.s.LastReconcileError = err.Error()
	}
}

// NodeSLOCondition implements slostatus.Hook: nil when the hook is off; False with NodeSLOReasonNRIUnavailable
// while the NRI plugin, configured, is not connected (Unknown before its first try), or with the kind of failure of
// the reconciler's last round when it failed; else True.
func (s *Status) NodeSLOCondition() *metav1.Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := metav1.Condition{Type: slov1alpha1.NodeSLORuntimeHook}
	switch {
	case s.s.Mode == ModeOff:
		return nil
	case s.s.Configured == string(ModeNRI) && !s.tried:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, slov1alpha1.NodeSLOReasonPending, "the NRI plugin has not tried to connect to "+s.s.NRISocket+" yet"
	case s.s.Configured == string(ModeNRI) && s.s.Mode != ModeNRI:
		c.Status, c.Reason = metav1.ConditionFalse, slov1alpha1.NodeSLOReasonNRIUnavailable
		c.Message = fmt.Sprintf("the NRI plugin is not connected to %s (%s): new batch and mid containers start with the kubelet's cgroup values and get theirs at the reconciler's next round",
			s.s.NRISocket, s.s.LastNRIError)
	case s.roundErr != nil:
		c = slostatus.Failure(slov1alpha1.NodeSLORuntimeHook, fmt.Errorf("the reconciler's last round: %w", s.roundErr))
	case s.s.Mode == ModeNRI:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, slov1alpha1.NodeSLOReasonApplied, "the NRI plugin is connected to "+s.s.Runtime+": containers get their values as they are created"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, slov1alpha1.NodeSLOReasonApplied, "the reconciler alone (--runtime-hook=reconciler): new containers get their values at its next round"
	}
	return &c
}

// Handler serves the status as JSON (the agent mounts it at /debug/runtimehook on its metrics address).
func (s *Status) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Info()) // a client that went away
	})
}
