package version

import "github.com/prometheus/client_golang/prometheus"

// NewCollector returns the gleaner_build_info gauge of i: always 1, the build in its labels version, commit (empty
// when unknown) and goversion. It is the convention of Prometheus's prometheus_build_info and kube-state-metrics'
// kube_state_metrics_build_info: `count by (job, version) (gleaner_build_info)` says which versions run, and a
// join on the instance puts a version next to any other series of that target.
func NewCollector(i Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gleaner_build_info",
		Help: "Always 1; the labels name the version the binary was built as, its git commit and its Go version.",
		ConstLabels: prometheus.Labels{
			"version":   i.Version,
			"commit":    i.Commit,
			"goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
