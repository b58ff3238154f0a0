package sloconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The fuzzers feed each key's parser arbitrary text, starting from Koordinator's examples (testdata/seed002) and a
// few hand-written values. `make fuzz` (part of `make test`) runs each for a few seconds; `go test` alone runs only
// the seed corpus. Besides "never panics", each checks what an accepted value must guarantee: every node gets a
// NodeSLO the API server accepts (the CRD schema), with consistent bounds, and a fully set colocation strategy.

func FuzzColocationConfig(f *testing.F) {
	fuzzKey(f, ColocationConfigKey, `{"enable": true, "metricAggregatePolicy": {"durations": ["1m"]}, "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "enable": false, "memoryCalculatePolicy": "request"}]}`)
}

func FuzzResourceThresholdConfig(f *testing.F) {
	fuzzKey(f, ResourceThresholdConfigKey, `{"clusterStrategy": {"memoryEvictThresholdPercent": 1, "cpuEvictBESatisfactionLowerPercent": 10, "cpuEvictBESatisfactionUpperPercent": 20}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}, "memoryEvictLowerPercent": 0}]}`,
		`{"clusterStrategy": {"cpuAllocatableEvictThresholdPercent": 80, "cpuAllocatableEvictLowerPercent": 60, "allocatableEvictPriorityThreshold": 5999}, "nodeStrategies": [{"name": "a", "nodeSelector": {}, "memoryAllocatableEvictThresholdPercent": 90}]}`)
}

func FuzzResourceQOSConfig(f *testing.F) {
	fuzzKey(f, ResourceQOSConfigKey, `{"clusterStrategy": {"beClass": {"blkioQOS": {"enable": true, "blocks": [{"name": "/dev/vda", "type": "device", "ioCfg": {"readIOPS": 100, "ioWeightPercent": 50}}]}}}, "nodeStrategies": [{"name": "a", "nodeSelector": {}, "systemClass": {"resctrlQOS": {"catRangeStartPercent": 10}}}]}`)
}

func FuzzCPUBurstConfig(f *testing.F) {
	fuzzKey(f, CPUBurstConfigKey, `{"clusterStrategy": {"policy": "auto", "cfsQuotaBurstPercent": 100}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "policy": "cpuBurstOnly"}]}`)
}

func FuzzSystemConfig(f *testing.F) {
	fuzzKey(f, SystemConfigKey, `{"clusterStrategy": {"watermarkScaleFactor": 10}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "memcgReapBackGround": 1}]}`)
}

func FuzzHostApplicationConfig(f *testing.F) {
	fuzzKey(f, HostApplicationConfigKey, `{"applications": [{"name": "a", "priority": "batch", "qos": "BE", "cgroupPath": {"base": "KubepodsBesteffort"}}], "nodeConfigs": [{"name": "n", "nodeSelector": {"matchLabels": {"pool": "a"}}, "applications": []}]}`)
}

func FuzzCPUNormalizationConfig(f *testing.F) {
	fuzzKey(f, CPUNormalizationConfigKey, `{"enable": true, "defaultRatio": 1.2, "ratioModel": {"m": {"baseRatio": 1.5, "hyperThreadTurboEnabledRatio": 1.1}}, "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "ratioModel": {"m": {"baseRatio": 2}}}]}`)
}

func FuzzResourceAmplificationConfig(f *testing.F) {
	fuzzKey(f, ResourceAmplificationConfigKey, `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5}, "nodeConfigs": [{"name": "a", "nodeSelector": {}, "resourceAmplificationRatio": {"memory": 1.2}}]}`)
}

func fuzzKey(f *testing.F, key string, extra ...string) {
	files, err := filepath.Glob(filepath.Join("testdata", "seed002", "*", key+".json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, v := range append(extra, "{}", "null", "[]", `{"nodeStrategies": [{}], "nodeConfigs": [{}]}`) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		_, err := ParseKey(key, strings.NewReader(value))
		s := NewStore().Apply(cm(map[string]string{key: value})).Current
		st := s.Key(key)
		if (err == nil) != (st.Err == nil) {
			t.Fatalf("ParseKey says %v, the store says %v", err, st.Err)
		}
		if err != nil {
			if st.Source != SourceDefault || !strings.HasPrefix(err.Error(), key+": ") {
				t.Fatalf("a rejected key must leave the defaults in force and name itself: %+v", st)
			}
			return
		}
		for _, labels := range nodeLabelsFor(s) {
			checkNode(t, s, labels)
		}
	})
}

// nodeLabelsFor returns label sets that reach the cluster strategy and every override of every key: the labels an
// override's selector requires (matchLabels, and In/Exists expressions), and none.
func nodeLabelsFor(s *Snapshot) []map[string]string {
	out := []map[string]string{nil, anolis}
	for _, k := range Keys() {
		out = append(out, s.values[k].(labelsProvider).overrideLabels()...)
	}
	return out
}

type labelsProvider interface{ overrideLabels() []map[string]string }

// overrideLabels returns, per override, labels its selector matches when it can be satisfied that way.
func (c *compiled[S]) overrideLabels() []map[string]string {
	var out []map[string]string
	for _, o := range c.overrides {
		reqs, _ := o.selector.Requirements()
		l := map[string]string{}
		for _, r := range reqs {
			if v, ok := r.Values().PopAny(); ok {
				l[r.Key()] = v
			} else {
				l[r.Key()] = "x"
			}
		}
		out = append(out, l)
	}
	return out
}

func checkNode(t *testing.T, s *Snapshot, labels map[string]string) {
	t.Helper()
	c := s.Colocation(labels)
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Pointer && v.Field(i).IsNil() {
			t.Fatalf("labels %v: merged colocation strategy has %s unset", labels, v.Type().Field(i).Name)
		}
	}
	if errs := validateColocation(c, field.NewPath("effective")); len(errs) > 0 {
		t.Fatalf("labels %v: accepted colocation strategy is out of range: %v", labels, errs)
	}
	spec := s.NodeSLOSpec(labels)
	if err := validateFullSpec(spec); err != nil {
		t.Fatalf("labels %v: an accepted config makes a NodeSLO the API server rejects: %v", labels, err)
	}
	eff := spec.WithDefaults()
	if err := validateFullSpec(eff); err != nil {
		t.Fatalf("labels %v: the defaulted NodeSLO breaks the schema: %v", labels, err)
	}
	errs := validateThresholdConsistency(eff.ResourceUsedThresholdWithBE, field.NewPath("effective"))
	errs = append(errs, validateQOSConsistency(eff.ResourceQOSStrategy, field.NewPath("effective"))...)
	if len(errs) > 0 {
		t.Fatalf("labels %v: accepted config has contradicting bounds: %v", labels, errs)
	}
	if errs := validateColocationConsistency(c, field.NewPath("effective")); len(errs) > 0 {
		t.Fatalf("labels %v: accepted colocation strategy is inconsistent: %v", labels, errs)
	}
	p := s.NodeMetricSpec(labels).CollectPolicy
	if p.AggregateDurationSeconds == nil || p.ReportIntervalSeconds == nil {
		t.Fatalf("labels %v: NodeMetric collect policy incomplete: %+v", labels, p)
	}
	// The NodeMetric CRD's bounds: what the manager accepts, the API server and the agent take as is.
	if *p.AggregateDurationSeconds > slov1alpha1.MaxMetricAggregateDurationSeconds || *p.ReportIntervalSeconds > slov1alpha1.MaxMetricReportIntervalSeconds {
		t.Fatalf("labels %v: NodeMetric collect policy beyond the CRD's bounds: %+v", labels, p)
	}
	if a := p.NodeAggregatePolicy; a != nil {
		if len(a.Durations) > slov1alpha1.MaxAggregateDurations {
			t.Fatalf("labels %v: %d aggregation windows", labels, len(a.Durations))
		}
		for _, d := range a.Durations {
			if d.Duration <= 0 || d.Duration > slov1alpha1.MaxAggregateDuration {
				t.Fatalf("labels %v: aggregation window %s beyond the CRD's bounds", labels, d.Duration)
			}
		}
	}
}
