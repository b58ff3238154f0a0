package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// CumulativeVec is a vector of counters whose values are readings of counters kept elsewhere: the kernel's CPU time
// and I/O counts of a cgroup. Set records a series' latest reading, and a scrape exports the readings as they are,
// as node_exporter and cAdvisor export theirs: nothing is lost between two scrapes, however seldom they come. A
// reading below the one before is the counter's reset (a cgroup made anew, as for a pod recreated under the same
// name), which PromQL's rate() and increase() take as one.
type CumulativeVec struct {
	desc   *prometheus.Desc
	labels []string

	mu     sync.Mutex
	series map[string]reading // by the label values, joined
}

type reading struct {
	values []string
	value  float64
}

var _ prometheus.Collector = &CumulativeVec{}

// NewCumulativeVec returns an empty vector of counters named name, with variable labels labels.
func NewCumulativeVec(name, help string, labels ...string) *CumulativeVec {
	return &CumulativeVec{desc: prometheus.NewDesc(name, help, labels, nil), labels: labels, series: map[string]reading{}}
}

// Set records v as the reading of the series of labelValues, given in the order of the vector's labels.
func (c *CumulativeVec) Set(v float64, labelValues ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.series[strings.Join(labelValues, "\xff")] = reading{values: labelValues, value: v}
}

// DeletePartialMatch removes every series whose labels include labels, and returns how many it removed.
func (c *CumulativeVec) DeletePartialMatch(labels prometheus.Labels) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, r := range c.series {
		if c.matches(r.values, labels) {
			delete(c.series, k)
			n++
		}
	}
	return n
}

// matches reports whether values carry labels; a label the vector does not have matches nothing.
func (c *CumulativeVec) matches(values []string, labels prometheus.Labels) bool {
	found := 0
	for i, name := range c.labels {
		if want, ok := labels[name]; ok {
			if values[i] != want {
				return false
			}
			found++
		}
	}
	return found == len(labels)
}

// Describe implements prometheus.Collector.
func (c *CumulativeVec) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// MetricType says the type of the vector's metric, a counter: the metrics reference (internal/metricsref) asks,
// since an empty vector has no series to show it.
func (c *CumulativeVec) MetricType(*prometheus.Desc) prometheus.ValueType {
	return prometheus.CounterValue
}

// Collect implements prometheus.Collector.
func (c *CumulativeVec) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.series {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, r.value, r.values...)
	}
}
