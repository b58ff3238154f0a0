package sloconfig

import (
	"fmt"
	"strings"
	"testing"
)

// benchConfig is a ConfigMap with every key set and ten node overrides per key: larger than most real ones.
func benchConfig(variant int) map[string]string {
	overrides := func(body string) string {
		var parts []string
		for i := range 10 {
			parts = append(parts, fmt.Sprintf(`{"name": "pool-%d", "nodeSelector": {"matchLabels": {"pool": "p%d"}}, %s}`, i, i, fmt.Sprintf(body, i)))
		}
		return strings.Join(parts, ",")
	}
	return map[string]string{
		ColocationConfigKey: fmt.Sprintf(`{"enable": true, "cpuReclaimThresholdPercent": %d, "nodeConfigs": [%s]}`, 60+variant,
			overrides(`"cpuReclaimThresholdPercent": 5%d`)),
		ResourceThresholdConfigKey: fmt.Sprintf(`{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 65}, "nodeStrategies": [%s]}`,
			overrides(`"cpuSuppressThresholdPercent": 5%d`)),
		ResourceQOSConfigKey: fmt.Sprintf(`{"clusterStrategy": {"beClass": {"cpuQOS": {"enable": true}, "memoryQOS": {"enable": true}}}, "nodeStrategies": [%s]}`,
			overrides(`"lsClass": {"memoryQOS": {"wmarkRatio": 8%d}}`)),
		CPUBurstConfigKey:        fmt.Sprintf(`{"clusterStrategy": {"policy": "auto"}, "nodeStrategies": [%s]}`, overrides(`"cpuBurstPercent": 10%d`)),
		SystemConfigKey:          fmt.Sprintf(`{"clusterStrategy": {"minFreeKbytesFactor": 100}, "nodeStrategies": [%s]}`, overrides(`"watermarkScaleFactor": 15%d`)),
		HostApplicationConfigKey: fmt.Sprintf(`{"applications": [{"name": "nginx", "qos": "LS"}], "nodeConfigs": [%s]}`, overrides(`"applications": [{"name": "app%d"}]`)),
	}
}

func benchNodes(n int) []map[string]string {
	nodes := make([]map[string]string, n)
	for i := range nodes {
		nodes[i] = map[string]string{"pool": fmt.Sprintf("p%d", i%12), "kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}
	}
	return nodes
}

// BenchmarkApply parses, validates and compiles a whole ConfigMap (every key changed).
func BenchmarkApply(b *testing.B) {
	configs := []map[string]string{benchConfig(0), benchConfig(1)}
	s := NewStore()
	i := 0
	for b.Loop() {
		s.Apply(cm(configs[i%2]))
		i++
	}
}

// BenchmarkColocation is what the noderesource controller pays per reconcile to get a node's strategy.
func BenchmarkColocation(b *testing.B) {
	s := snapshotOf(b, benchConfig(0))
	labels := benchNodes(1)[0]
	labels["pool"] = "p11" // no override matches: every selector is tried
	for b.Loop() {
		_ = s.Colocation(labels)
	}
}

// BenchmarkNodeSLOSpec is what the nodeslo controller pays per reconcile.
func BenchmarkNodeSLOSpec(b *testing.B) {
	s := snapshotOf(b, benchConfig(0))
	labels := benchNodes(1)[0]
	for b.Loop() {
		_ = s.NodeSLOSpec(labels)
	}
}

// BenchmarkChangeFanout2000Nodes is what NodeSource pays per config change to pick the nodes to enqueue, for 2,000
// nodes with ten overrides per key: a real colocation change, checked by the noderesource and the nodeslo
// controllers' functions (nodeslo skips it without matching a selector), and a reformatted key that changes no
// node (every node compared, none enqueued: the worst case).
func BenchmarkChangeFanout2000Nodes(b *testing.B) {
	nodes := benchNodes(2000)
	base := benchConfig(0)
	colocation := benchConfig(0)
	colocation[ColocationConfigKey] = benchConfig(1)[ColocationConfigKey]
	reformatted := benchConfig(0)
	reformatted[ResourceThresholdConfigKey] += "\n"
	for _, tc := range []struct {
		name    string
		next    map[string]string
		changed NodeChangedFunc
	}{
		{"colocation/ColocationChanged", colocation, ColocationChanged},
		{"colocation/NodeSLOChanged", colocation, NodeSLOChanged},
		{"reformatted/NodeSLOChanged", reformatted, NodeSLOChanged},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewStore()
			old := s.Apply(cm(base)).Current
			cur := s.Apply(cm(tc.next)).Current
			enqueued := 0
			for b.Loop() {
				enqueued = 0
				for _, l := range nodes {
					if tc.changed(old, cur, l) {
						enqueued++
					}
				}
			}
			b.ReportMetric(float64(enqueued), "nodes-enqueued")
		})
	}
}
