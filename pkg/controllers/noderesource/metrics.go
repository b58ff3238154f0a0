package noderesource

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
			value: prometheus.NewDesc("gleaner_noderesource_value",
				"Reclaimed resource calculated for a node (CPU in millicores, memory in bytes); absent when removed.",
				[]string{"node", "resource"}, nil),
			term: prometheus.NewDesc("gleaner_noderesource_term",
				"One term of the derivation of a reclaimed resource (CPU in cores, memory in bytes), as kubectl glean explain shows it.",
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
type derivationCollector struct {
	value, term             *prometheus.Desc
	degraded, metricUpdated *prometheus.Desc
	withTerms               bool

	mu     sync.RWMutex
	nodes  map[string][]resourceTerms
	status map[string]nodeStatus
}

type resourceTerms struct {
	resource string
	value    float64
	terms    []namedValue
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
		r := resourceTerms{resource: string(d.Resource), value: float64(d.Value.Value())}
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
	ch <- c.value
	ch <- c.term
	ch <- c.degraded
	ch <- c.metricUpdated
}

// Collect implements prometheus.Collector.
func (c *derivationCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for node, rs := range c.nodes {
		for _, r := range rs {
			ch <- prometheus.MustNewConstMetric(c.value, prometheus.GaugeValue, r.value, node, r.resource)
			for _, t := range r.terms {
				ch <- prometheus.MustNewConstMetric(c.term, prometheus.GaugeValue, t.value, node, r.resource, t.name)
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
