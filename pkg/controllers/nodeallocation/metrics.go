package nodeallocation

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// metrics are the controller's Prometheus series.
type metrics struct {
	requests, limits *prometheus.GaugeVec
	duration         prometheus.Histogram
	writes           prometheus.Counter
	retries          prometheus.Counter

	mu        sync.Mutex
	published map[string]map[corev1.ResourceName]bool // node -> resources with series
}

func newMetrics() *metrics {
	unit := "in the resource's unit: cores for cpu, bytes for memory, ephemeral-storage and hugepages, the count for extended resources"
	return &metrics{
		published: map[string]map[corev1.ResourceName]bool{},
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

// register adds the series to reg.
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.limits, m.duration, m.writes, m.retries} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the nodeallocation metrics: %w", err)
		}
	}
	return nil
}

// set publishes a node's summary and drops the node's series of resources it no longer has. It remembers which
// series each node has: finding them with DeletePartialMatch scans every series of every node, which at 2,000
// nodes was most of the controller's CPU.
func (m *metrics) set(node string, s allocation.Summary) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := make(map[corev1.ResourceName]bool, len(s.Requests))
	for name, q := range s.Requests {
		m.requests.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
		now[name] = true
	}
	for name, q := range s.Limits {
		m.limits.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
		now[name] = true
	}
	for name := range m.published[node] {
		if !now[name] {
			m.requests.DeleteLabelValues(node, string(name))
			m.limits.DeleteLabelValues(node, string(name))
		}
	}
	m.published[node] = now
}

// forget removes every series of a node.
func (m *metrics) forget(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.published[node] {
		m.requests.DeleteLabelValues(node, string(name))
		m.limits.DeleteLabelValues(node, string(name))
	}
	delete(m.published, node)
}
