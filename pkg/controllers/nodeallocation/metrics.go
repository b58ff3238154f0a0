package nodeallocation

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// metrics are the controller's Prometheus series. A node's allocated requests and limits are one family per unit
// (allocation.InUnit): cores, bytes, and the integer units of the other extended resources.
type metrics struct {
	requests, limits map[allocation.Unit]*prometheus.GaugeVec
	// oldRequests and oldLimits are the families these replaced, which mixed the units under one name; they are
	// kept one release for the dashboards and alerts that read them.
	oldRequests, oldLimits *prometheus.GaugeVec
	duration               prometheus.Histogram
	writes                 prometheus.Counter
	retries                prometheus.Counter

	mu        sync.Mutex
	published map[string]map[corev1.ResourceName]bool // node -> resources with series
}

func newMetrics() *metrics {
	// The names are written out whole, so that a search for one finds it.
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"node", "resource"})
	}
	byUnit := func(what, cores, bytes, extended string) map[allocation.Unit]*prometheus.GaugeVec {
		sum := "Sum of the " + what + " of the pods counted on a node (as kubectl describe node)"
		return map[allocation.Unit]*prometheus.GaugeVec{
			allocation.Cores: gauge(cores, sum+" of CPU, in cores, by resource: cpu, kubernetes.io/batch-cpu, kubernetes.io/mid-cpu."),
			allocation.Bytes: gauge(bytes, sum+" of the resources counted in bytes, by resource: memory, ephemeral-storage, hugepages-*, kubernetes.io/batch-memory, kubernetes.io/mid-memory."),
			allocation.Count: gauge(extended, sum+" of the other extended resources (such as nvidia.com/gpu), in their integer units, by resource."),
		}
	}
	deprecated := func(what, name string) *prometheus.GaugeVec {
		return gauge(name, "Deprecated: use "+name+"_cpu_cores, "+name+"_bytes and "+name+"_extended, one unit each; "+
			"removed after one release. Sum of the "+what+" of the pods counted on a node (as kubectl describe node), "+
			"in the resource's unit: cores for cpu, bytes for memory, ephemeral-storage and hugepages, the count for "+
			"extended resources (millicores for kubernetes.io/batch-cpu and mid-cpu).")
	}
	requests := byUnit("requests", "gleaner_node_allocated_requests_cpu_cores", "gleaner_node_allocated_requests_bytes",
		"gleaner_node_allocated_requests_extended")
	limits := byUnit("limits", "gleaner_node_allocated_limits_cpu_cores", "gleaner_node_allocated_limits_bytes",
		"gleaner_node_allocated_limits_extended")
	return &metrics{
		published:   map[string]map[corev1.ResourceName]bool{},
		requests:    requests,
		limits:      limits,
		oldRequests: deprecated("requests", "gleaner_node_allocated_requests"),
		oldLimits:   deprecated("limits", "gleaner_node_allocated_limits"),
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
	cs := []prometheus.Collector{m.oldRequests, m.oldLimits, m.duration, m.writes, m.retries}
	for _, u := range []allocation.Unit{allocation.Cores, allocation.Bytes, allocation.Count} {
		cs = append(cs, m.requests[u], m.limits[u])
	}
	for _, c := range cs {
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
		v, unit := allocation.InUnit(name, q)
		m.requests[unit].WithLabelValues(node, string(name)).Set(v)
		m.oldRequests.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
		now[name] = true
	}
	for name, q := range s.Limits {
		v, unit := allocation.InUnit(name, q)
		m.limits[unit].WithLabelValues(node, string(name)).Set(v)
		m.oldLimits.WithLabelValues(node, string(name)).Set(q.AsApproximateFloat64())
		now[name] = true
	}
	for name := range m.published[node] {
		if !now[name] {
			m.delete(node, name)
		}
	}
	m.published[node] = now
}

// forget removes every series of a node.
func (m *metrics) forget(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.published[node] {
		m.delete(node, name)
	}
	delete(m.published, node)
}

// delete removes the series of one resource of a node.
func (m *metrics) delete(node string, name corev1.ResourceName) {
	_, unit := allocation.InUnit(name, resource.Quantity{})
	m.requests[unit].DeleteLabelValues(node, string(name))
	m.limits[unit].DeleteLabelValues(node, string(name))
	m.oldRequests.DeleteLabelValues(node, string(name))
	m.oldLimits.DeleteLabelValues(node, string(name))
}
