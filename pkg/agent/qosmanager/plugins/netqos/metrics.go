package netqos

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// The counters of each network class on the shaped device, read from the kernel at each scrape.
var (
	sentBytesDesc = prometheus.NewDesc("gleaner_agent_netqos_sent_bytes_total",
		"Bytes the network class sent through the device network QoS shapes (its HTB class's counter, since the tree was made).",
		[]string{"device", "class"}, nil)
	sentPacketsDesc = prometheus.NewDesc("gleaner_agent_netqos_sent_packets_total",
		"Packets the network class sent through the device network QoS shapes.",
		[]string{"device", "class"}, nil)
	overlimitsDesc = prometheus.NewDesc("gleaner_agent_netqos_overlimits_total",
		"Times the network class's HTB class was over its rate and had to borrow or wait: how often its limit held it back.",
		[]string{"device", "class"}, nil)
	droppedDesc = prometheus.NewDesc("gleaner_agent_netqos_dropped_packets_total",
		"Packets the fq_codel qdiscs of the network class's leaves dropped (a full queue, or CoDel keeping the queue short).",
		[]string{"device", "class"}, nil)
)

// Describe implements prometheus.Collector.
func (p *Plugin) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sentBytesDesc, sentPacketsDesc, overlimitsDesc, droppedDesc} {
		ch <- d
	}
}

// MetricType says the type of the metric d describes: each of the plugin's is a counter. The metrics reference
// (internal/metricsref) asks, since the plugin has no series while it shapes no device.
func (p *Plugin) MetricType(*prometheus.Desc) prometheus.ValueType { return prometheus.CounterValue }

// Collect implements prometheus.Collector: the counters of each class of the tree on the device the plugin last
// shaped; nothing while it shapes none. A device that cannot be read is logged and left out, so that the rest of
// the agent's metrics are still scraped.
func (p *Plugin) Collect(ch chan<- prometheus.Metric) {
	dev := p.shapedDevice()
	if dev == "" {
		return
	}
	link, err := p.shaper.nl.LinkByName(dev)
	if err != nil {
		klog.V(2).InfoS("network QoS metrics: device gone", "device", dev, "err", err)
		return
	}
	stats, err := p.shaper.stats(link)
	if err != nil {
		klog.V(2).InfoS("network QoS metrics: reading the classes", "device", dev, "err", err)
		return
	}
	for nc := range numClasses {
		st, ok := stats[nc]
		if !ok {
			continue
		}
		class := classNames[nc]
		ch <- prometheus.MustNewConstMetric(sentBytesDesc, prometheus.CounterValue, float64(st.bytes), dev, class)
		ch <- prometheus.MustNewConstMetric(sentPacketsDesc, prometheus.CounterValue, float64(st.packets), dev, class)
		ch <- prometheus.MustNewConstMetric(overlimitsDesc, prometheus.CounterValue, float64(st.overlimits), dev, class)
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(st.drops), dev, class)
	}
}

// setShaped records the device whose tree the metrics read ("" for none).
func (p *Plugin) setShaped(dev string) {
	p.shapedMu.Lock()
	defer p.shapedMu.Unlock()
	p.shaped = dev
}

func (p *Plugin) shapedDevice() string {
	p.shapedMu.Lock()
	defer p.shapedMu.Unlock()
	return p.shaped
}
