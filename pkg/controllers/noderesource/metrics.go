package noderesource

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
)

// metrics are the controller's Prometheus series, registered in controller-runtime's registry (served on the
// manager's /metrics).
type metrics struct {
	value             *prometheus.GaugeVec
	term              *prometheus.GaugeVec
	writes            prometheus.Counter
	reconcileDuration prometheus.Histogram
}

func newMetrics() (*metrics, error) {
	m := &metrics{
		value: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_noderesource_value",
			Help: "Reclaimed resource calculated for a node (CPU in millicores, memory in bytes); absent when removed.",
		}, []string{"node", "resource"}),
		term: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_noderesource_term",
			Help: "One term of the derivation of a reclaimed resource (CPU in cores, memory in bytes), as kubectl glean explain shows it.",
		}, []string{"node", "resource", "term"}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gleaner_noderesource_node_writes_total",
			Help: "Node status writes made by the noderesource controller.",
		}),
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gleaner_noderesource_reconcile_duration_seconds",
			Help:    "Time to reconcile one node, from its cache reads to its write.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
	}
	var err error
	if m.value, err = register(m.value); err != nil {
		return nil, err
	}
	if m.term, err = register(m.term); err != nil {
		return nil, err
	}
	if m.writes, err = register(m.writes); err != nil {
		return nil, err
	}
	if m.reconcileDuration, err = register(m.reconcileDuration); err != nil {
		return nil, err
	}
	return m, nil
}

// register adds c to the registry, or returns the collector registered before under the same name (a second
// controller in one process, as in tests, shares the series).
func register[C prometheus.Collector](c C) (C, error) {
	err := ctrlmetrics.Registry.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering noderesource metrics: %w", err)
}

// observe exports the values and derivation terms of one calculation.
func (m *metrics) observe(node string, nr *framework.NodeResource) {
	for _, d := range nr.Derivations {
		r := string(d.Resource)
		if d.Value == nil {
			m.value.DeleteLabelValues(node, r)
			m.term.DeletePartialMatch(prometheus.Labels{"node": node, "resource": r})
			continue
		}
		m.value.WithLabelValues(node, r).Set(float64(d.Value.Value()))
		// A plugin's terms are the same names every time, so setting them overwrites the previous calculation.
		for _, t := range d.Terms {
			m.term.WithLabelValues(node, r, t.Name).Set(t.Value.AsApproximateFloat64())
		}
	}
}

// forget removes a deleted node's series.
func (m *metrics) forget(node string) {
	m.value.DeletePartialMatch(prometheus.Labels{"node": node})
	m.term.DeletePartialMatch(prometheus.Labels{"node": node})
}
