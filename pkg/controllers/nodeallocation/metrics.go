package nodeallocation

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// metrics are the controller's Prometheus series.
type metrics struct {
	requests, limits *prometheus.GaugeVec
	duration         prometheus.Histogram
	writes           prometheus.Counter
	retries          prometheus.Counter
}

func newMetrics() *metrics {
	unit := "in the resource's unit: cores for cpu, bytes for memory, ephemeral-storage and hugepages, the count for extended resources"
	return &metrics{
		requests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_node_allocated_requests",
			Help: "Sum of the requests of the pods counted on a node (as kubectl describe node), " + unit + ".",
		}, []string{"node", "resource"}),
		limits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_node_allocated_limits",
			Help: "Sum of the limits of the pods counted on a node (as kubectl describe node), " + unit + ".",
		}, []string{"node", "resource"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gleaner_nodeallocation_reconcile_duration_seconds",
			Help:    "Time to recompute one node's allocation and write it when it changed.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gleaner_nodeallocation_status_writes_total",
			Help: "NodeAllocation status writes; a summary that did not change is not written.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gleaner_nodeallocation_retries_total",
			Help: "Reconciles retried because the cached NodeAllocation was older than the stored one (a write conflict).",
		}),
	}
}

// register adds the series to reg. A series already there (a second controller in the same process, as in tests)
// is shared rather than an error.
func (m *metrics) register(reg prometheus.Registerer) error {
	var err error
	if m.requests, err = registerOrReuse(reg, m.requests); err != nil {
		return err
	}
	if m.limits, err = registerOrReuse(reg, m.limits); err != nil {
		return err
	}
	if m.duration, err = registerOrReuse(reg, m.duration); err != nil {
		return err
	}
	if m.writes, err = registerOrReuse(reg, m.writes); err != nil {
		return err
	}
	m.retries, err = registerOrReuse(reg, m.retries)
	return err
}

func registerOrReuse[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering metrics: %w", err)
}

// set publishes a node's summary, dropping the node's old series first when its resources may have changed.
func (m *metrics) set(node string, s allocation.Summary, changed bool) {
	if changed {
		m.forget(node)
	}
	for name, q := range s.Requests {
		m.requests.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
	}
	for name, q := range s.Limits {
		m.limits.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
	}
}

// forget removes every series of a node.
func (m *metrics) forget(node string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"node": node})
	m.limits.DeletePartialMatch(prometheus.Labels{"node": node})
}
