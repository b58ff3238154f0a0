package noderesource

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/prom"
)

// metrics are the controller's Prometheus series. The controller registers them in controller-runtime's registry,
// which the manager serves on /metrics.
type metrics struct {
	mu     sync.Mutex
	series map[string]map[corev1.ResourceName][]string // node -> resource -> term names, of the series set

	value             *prometheus.GaugeVec
	term              *prometheus.GaugeVec
	writes            prometheus.Counter
	reconcileDuration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		series: map[string]map[corev1.ResourceName][]string{},
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
	if m.value, err = prom.Register(reg, m.value); err != nil {
		return nil, err
	}
	if m.term, err = prom.Register(reg, m.term); err != nil {
		return nil, err
	}
	if m.writes, err = prom.Register(reg, m.writes); err != nil {
		return nil, err
	}
	if m.reconcileDuration, err = prom.Register(reg, m.reconcileDuration); err != nil {
		return nil, err
	}
	return m, nil
}

// observe exports the values and derivation terms of one calculation, and drops the series of resources the
// node no longer publishes. It remembers each node's series instead of finding them with DeletePartialMatch, which
// scans every series of every node.
func (m *metrics) observe(node string, nr *framework.NodeResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	had := m.series[node]
	now := map[corev1.ResourceName][]string{}
	for _, d := range nr.Derivations {
		if d.Value == nil {
			continue
		}
		r := string(d.Resource)
		m.value.WithLabelValues(node, r).Set(float64(d.Value.Value()))
		terms := make([]string, 0, len(d.Terms))
		for _, t := range d.Terms {
			m.term.WithLabelValues(node, r, t.Name).Set(t.Value.AsApproximateFloat64())
			terms = append(terms, t.Name)
		}
		now[d.Resource] = terms
	}
	for r, terms := range had {
		kept := map[string]bool{}
		for _, t := range now[r] {
			kept[t] = true
		}
		if _, ok := now[r]; !ok {
			m.value.DeleteLabelValues(node, string(r))
		}
		for _, t := range terms {
			if !kept[t] {
				m.term.DeleteLabelValues(node, string(r), t)
			}
		}
	}
	if len(now) == 0 {
		delete(m.series, node)
		return
	}
	m.series[node] = now
}

// forget removes a deleted node's series.
func (m *metrics) forget(node string) {
	m.observe(node, framework.NewNodeResource())
}
