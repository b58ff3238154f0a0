package noderesource

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
)

// metrics are the controller's Prometheus series, registered in the registry New was given (the manager passes
// controller-runtime's, which it serves on /metrics).
type metrics struct {
	derivations       *derivationCollector
	writes            prometheus.Counter
	reconcileDuration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, terms bool) (*metrics, error) {
	m := &metrics{
		derivations: &derivationCollector{
			cpu: prometheus.NewDesc("gleaner_noderesource_cpu_cores",
				"CPU a node-resource plugin calculated for a node, in cores, by resource (kubernetes.io/batch-cpu, kubernetes.io/mid-cpu); absent when removed.",
				[]string{"node", "resource"}, nil),
			memory: prometheus.NewDesc("gleaner_noderesource_memory_bytes",
				"Memory a node-resource plugin calculated for a node, in bytes, by resource (kubernetes.io/batch-memory, kubernetes.io/mid-memory); absent when removed.",
				[]string{"node", "resource"}, nil),
			termCPU: prometheus.NewDesc("gleaner_noderesource_term_cpu_cores",
				"One term of the derivation of a CPU resource of a node, in cores, as kubectl glean explain shows it (with --noderesource-term-metrics).",
				[]string{"node", "resource", "term"}, nil),
			termMemory: prometheus.NewDesc("gleaner_noderesource_term_memory_bytes",
				"One term of the derivation of a memory resource of a node, in bytes, as kubectl glean explain shows it (with --noderesource-term-metrics).",
				[]string{"node", "resource", "term"}, nil),
			value: prometheus.NewDesc("gleaner_noderesource_value",
				"Deprecated: use gleaner_noderesource_cpu_cores and gleaner_noderesource_memory_bytes, one unit each; removed after one release. Reclaimed resource calculated for a node (CPU in millicores, memory in bytes); absent when removed.",
				[]string{"node", "resource"}, nil),
			term: prometheus.NewDesc("gleaner_noderesource_term",
				"Deprecated: use gleaner_noderesource_term_cpu_cores and gleaner_noderesource_term_memory_bytes, one unit each; removed after one release. One term of the derivation of a reclaimed resource (CPU in cores, memory in bytes), as kubectl glean explain shows it.",
				[]string{"node", "resource", "term"}, nil),
			degraded: prometheus.NewDesc("gleaner_noderesource_degraded",
				"1 when colocation is on for a node but its NodeMetric cannot be used (missing, without usage, older than degradeTimeMinutes, stamped ahead): its batch and mid resources are removed; else 0.",
				[]string{"node"}, nil),
			metricUpdated: prometheus.NewDesc("gleaner_noderesource_nodemetric_update_timestamp_seconds",
				"Unix time of the node's NodeMetric status.updateTime as the controller last read it; absent while the NodeMetric has none.",
				[]string{"node"}, nil),
			nodes:     map[string][]resourceTerms{},
			status:    map[string]nodeStatus{},
			withTerms: terms,
		},
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
	for _, c := range []prometheus.Collector{m.derivations, m.writes, m.reconcileDuration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the noderesource metrics: %w", err)
		}
	}
	return m, nil
}

// observe keeps the values and derivation terms of a node's latest calculation, and the state of its NodeMetric,
// for the next scrape.
func (m *metrics) observe(node string, nr *framework.NodeResource, st nodeStatus) {
	m.derivations.set(node, nr)
	m.derivations.setStatus(node, &st)
}

// forget drops a deleted node's series.
func (m *metrics) forget(node string) {
	m.derivations.set(node, framework.NewNodeResource())
	m.derivations.setStatus(node, nil)
}

// nodeStatus is what the alerts need to know of a node's NodeMetric (config/monitoring/gleaner-rules.yaml).
type nodeStatus struct {
	// degraded: colocation is on for the node and its NodeMetric cannot be used.
	degraded bool
	// metricUpdated is the NodeMetric's status.updateTime, zero when there is none.
	metricUpdated time.Time
}

// derivationCollector exports the latest derivation of every node at scrape time. It keeps one float per term
// instead of one Prometheus gauge per series: with ~50 series per node, gauges cost about 25 KiB per node (48 MiB
// at 2,000 nodes), these floats about 1 KiB. The price is paid at scrape time instead: building the series of
// 2,000 nodes takes about half a second of CPU (docs/benchmarks.md), which --noderesource-term-metrics=false saves.
//
// A resource's value and terms are in the family of its unit: cpu (cores) or memory (bytes). The deprecated value
// and term families, which mixed the two, are exported beside them for one release.
type derivationCollector struct {
	cpu, memory, termCPU, termMemory *prometheus.Desc
	value, term                      *prometheus.Desc
	degraded, metricUpdated          *prometheus.Desc
	withTerms                        bool

	mu     sync.RWMutex
	nodes  map[string][]resourceTerms
	status map[string]nodeStatus
}

type resourceTerms struct {
	resource string
	// unit is the resource's (allocation.InUnit), value its value in that unit, raw the published quantity's
	// integer (millicores for CPU), which the deprecated value family exports.
	unit       allocation.Unit
	value, raw float64
	// terms are in unit already: the plugins give them as quantities of cpu or memory.
	terms []namedValue
}

type namedValue struct {
	name  string
	value float64
}

func (c *derivationCollector) set(node string, nr *framework.NodeResource) {
	var rs []resourceTerms
	for _, d := range nr.Derivations {
		if d.Value == nil {
			continue
		}
		v, unit := allocation.InUnit(d.Resource, *d.Value)
		r := resourceTerms{resource: string(d.Resource), unit: unit, value: v, raw: float64(d.Value.Value())}
		if c.withTerms {
			r.terms = make([]namedValue, len(d.Terms))
			for i, t := range d.Terms {
				r.terms[i] = namedValue{name: t.Name, value: t.Value.AsApproximateFloat64()}
			}
		}
		rs = append(rs, r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(rs) == 0 {
		delete(c.nodes, node)
		return
	}
	c.nodes[node] = rs
}

// byUnit are the value and term families of a resource of unit u; nil for a unit with none.
func (c *derivationCollector) byUnit(u allocation.Unit) (value, term *prometheus.Desc) {
	switch u {
	case allocation.Cores:
		return c.cpu, c.termCPU
	case allocation.Bytes:
		return c.memory, c.termMemory
	}
	return nil, nil
}

// setStatus keeps a node's NodeMetric state; nil drops it.
func (c *derivationCollector) setStatus(node string, st *nodeStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st == nil {
		delete(c.status, node)
		return
	}
	c.status[node] = *st
}

// Describe implements prometheus.Collector.
func (c *derivationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cpu, c.memory, c.termCPU, c.termMemory, c.value, c.term, c.degraded, c.metricUpdated} {
		ch <- d
	}
}

// MetricType says the type of the metric d describes: each of the collector's is a gauge. The metrics reference
// (internal/metricsref) asks, since the collector has no series before its first calculation to show it.
func (c *derivationCollector) MetricType(*prometheus.Desc) prometheus.ValueType {
	return prometheus.GaugeValue
}

// Collect implements prometheus.Collector.
func (c *derivationCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for node, rs := range c.nodes {
		for _, r := range rs {
			ch <- prometheus.MustNewConstMetric(c.value, prometheus.GaugeValue, r.raw, node, r.resource)
			for _, t := range r.terms {
				ch <- prometheus.MustNewConstMetric(c.term, prometheus.GaugeValue, t.value, node, r.resource, t.name)
			}
			value, term := c.byUnit(r.unit)
			if value == nil {
				continue // no plugin publishes a resource counted in neither cores nor bytes
			}
			ch <- prometheus.MustNewConstMetric(value, prometheus.GaugeValue, r.value, node, r.resource)
			for _, t := range r.terms {
				ch <- prometheus.MustNewConstMetric(term, prometheus.GaugeValue, t.value, node, r.resource, t.name)
			}
		}
	}
	for node, st := range c.status {
		degraded := 0.0
		if st.degraded {
			degraded = 1
		}
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, degraded, node)
		if !st.metricUpdated.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.metricUpdated, prometheus.GaugeValue,
				float64(st.metricUpdated.UnixNano())/1e9, node)
		}
	}
}
