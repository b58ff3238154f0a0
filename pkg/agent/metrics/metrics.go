// Package metrics holds gleaner-agent's Prometheus metrics: one registry per agent (no global state), with the
// collectors' duration and outcome, the node's and pods' usage gauges, the metric cache's size and the NodeMetric
// reports. Every metric is prefixed gleaner_agent_ but gleaner_build_info, which the manager exports too.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// Results of a collector run, the result label of gleaner_agent_collector_runs_total.
const (
	ResultSuccess     = "success"
	ResultError       = "error"
	ResultUnsupported = "unsupported"
)

// Results of a NodeMetric report, the result label of gleaner_agent_nodemetric_reports_total.
const (
	ReportWritten   = "written"
	ReportUnchanged = "unchanged"
	ReportNotReady  = "not_ready"
	ReportNoObject  = "no_nodemetric"
	ReportError     = "error"
)

// Metrics are the agent's metrics, registered in Registry.
type Metrics struct {
	// Registry holds every metric below plus the Go runtime and process collectors and the binary's
	// gleaner_build_info; nil when NewIn made the metrics.
	Registry *prometheus.Registry
	// reg is where the metrics are registered: Registry, or NewIn's registerer.
	reg prometheus.Registerer
	// CollectorDuration is how long one run of a collector took, by collector.
	CollectorDuration *prometheus.HistogramVec
	// CollectorRuns counts collector runs by collector and result (success, error, unsupported).
	CollectorRuns *prometheus.CounterVec
	// NodeCPUUsage is the node's CPU usage, cores, from the last sample.
	NodeCPUUsage prometheus.Gauge
	// NodeMemoryUsage is the node's memory usage without page cache, bytes, from the last sample.
	NodeMemoryUsage prometheus.Gauge
	// PodCPUSeconds is the CPU time each pod's cgroup has used, seconds, by namespace and pod.
	PodCPUSeconds *CumulativeVec
	// PodCPUUsage is each pod's CPU usage at the last sample, cores, by namespace and pod. Deprecated for
	// PodCPUSeconds, whose rate() loses no peak between two scrapes; kept one release.
	PodCPUUsage *prometheus.GaugeVec
	// PodMemoryUsage is each pod's memory usage without page cache, bytes, by namespace and pod.
	PodMemoryUsage *prometheus.GaugeVec
	// QoSCPUUsage is the CPU the pods of each QoS class use together, cores, by qos (LSE, LSR, LS, BE, SYSTEM, NONE).
	QoSCPUUsage *prometheus.GaugeVec
	// QoSMemoryUsage is the memory without page cache the pods of each QoS class use together, bytes, by qos.
	QoSMemoryUsage *prometheus.GaugeVec
	// Reports counts NodeMetric reports by result.
	Reports *prometheus.CounterVec
	// TopologyReports counts NodeResourceTopology reports by result.
	TopologyReports *prometheus.CounterVec
	// Devices are the storage, CPI, cold-memory and GPU gauges.
	Devices *Devices
}

// New returns the metrics in a fresh registry, Registry, which the agent serves.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := NewIn(r)
	m.Registry = r
	return m
}

// NewIn returns the metrics registered in reg, with Registry nil: for a registry that is not the agent's own (the
// metrics reference, internal/metricsref, lists what the agent registers without running one).
func NewIn(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		CollectorDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gleaner_agent_collector_duration_seconds",
			Help:    "Duration of one run of a collector.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8), // 100us .. 1.6s
		}, []string{"collector"}),
		CollectorRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_collector_runs_total",
			Help: "Runs of a collector by result: success, error (the run failed, or some pods did) or unsupported (the host lacks what it reads).",
		}, []string{"collector", "result"}),
		NodeCPUUsage: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gleaner_agent_node_cpu_usage_cores",
			Help: "CPU the node uses (user+nice+system+irq+softirq of /proc/stat), in cores, at the last sample.",
		}),
		NodeMemoryUsage: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gleaner_agent_node_memory_usage_bytes",
			Help: "Memory the node uses (MemTotal - MemAvailable), at the last sample.",
		}),
		PodCPUSeconds: NewCumulativeVec("gleaner_agent_pod_cpu_usage_seconds_total",
			"CPU time a pod's cgroup has used since it was made (cpuacct.usage on cgroup v1, cpu.stat usage_usec on v2), as last read.",
			"namespace", "pod"),
		PodCPUUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_pod_cpu_usage_cores",
			Help: "Deprecated: use rate() of gleaner_agent_pod_cpu_usage_seconds_total, which loses no peak between two scrapes; removed after one release. CPU a pod uses, in cores, at the last sample.",
		}, []string{"namespace", "pod"}),
		PodMemoryUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_pod_memory_usage_bytes",
			Help: "Memory a pod uses without page cache, at the last sample.",
		}, []string{"namespace", "pod"}),
		QoSCPUUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_qos_cpu_usage_cores",
			Help: "CPU the pods of a QoS class use together, in cores, at the last sample; a class without pods has no series.",
		}, []string{"qos"}),
		QoSMemoryUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_agent_qos_memory_usage_bytes",
			Help: "Memory without page cache the pods of a QoS class use together, at the last sample; a class without pods has no series.",
		}, []string{"qos"}),
		Reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_nodemetric_reports_total",
			Help: "NodeMetric status reports by result: written, unchanged (nothing to send), not_ready (too little data), no_nodemetric, error.",
		}, []string{"result"}),
		TopologyReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_topology_reports_total",
			Help: "NodeResourceTopology reports by result: written, unchanged (nothing to send), not_ready (Node not known yet), no_crd (the cluster has no NodeResourceTopology CRD), error.",
		}, []string{"result"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.NewCollector(version.Get()),
		m.CollectorDuration, m.CollectorRuns, m.NodeCPUUsage, m.NodeMemoryUsage, m.PodCPUSeconds, m.PodCPUUsage, m.PodMemoryUsage,
		m.QoSCPUUsage, m.QoSMemoryUsage, m.Reports, m.TopologyReports,
	)
	m.Devices = newDevices(reg)
	return m
}

// RegisterCacheSize adds gauges of the metric cache's size, read from stats at every scrape.
func (m *Metrics) RegisterCacheSize(stats func() (series int, bytes int64)) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gleaner_agent_metric_cache_series",
			Help: "Series in the metric cache.",
		}, func() float64 { s, _ := stats(); return float64(s) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gleaner_agent_metric_cache_bytes",
			Help: "Memory the metric cache's series take (fixed per series).",
		}, func() float64 { _, b := stats(); return float64(b) }),
	)
}

// DeletePod removes a pod's usage series.
func (m *Metrics) DeletePod(namespace, name string) {
	m.PodCPUSeconds.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "pod": name})
	m.PodCPUUsage.DeleteLabelValues(namespace, name)
	m.PodMemoryUsage.DeleteLabelValues(namespace, name)
}
