package sloconfig

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

const sel = `"nodeSelector": {"matchLabels": {"pool": "a"}}`

// TestValidation feeds each key malformed and invalid values; every one must be rejected with a message that names
// the field and says what is wrong.
func TestValidation(t *testing.T) {
	tests := []struct {
		name, key, value string
		wantErr          []string // substrings of the error; empty means valid
	}{
		{"empty value", ColocationConfigKey, "  \n", []string{"the value is empty"}},
		{"not JSON", ColocationConfigKey, "enable: true", []string{"malformed JSON at line 1, column 1"}},
		{"trailing comma", SystemConfigKey, "{\"clusterStrategy\": {\"minFreeKbytesFactor\": 1,}}", []string{"line 1, column 47"}},
		{"wrong type", ResourceThresholdConfigKey, "{\n\"clusterStrategy\": {\"cpuSuppressThresholdPercent\": \"65\"}}",
			[]string{"clusterStrategy.cpuSuppressThresholdPercent at line 2, column 55: must be an integer from 0 to 100, not a JSON string"}},
		{"bad duration", ColocationConfigKey, `{"metricAggregatePolicy": {"durations": ["5x"]}}`, []string{`invalid value: time: unknown unit "x"`}},
		{"JSON null is the defaults", CPUBurstConfigKey, "null", nil},
		{"percent above 100", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuSuppressThresholdPercent": 120}}`,
			[]string{"clusterStrategy.cpuSuppressThresholdPercent: Invalid value: 120: must be from 0 to 100"}},
		{"negative percent in a node strategy", ResourceThresholdConfigKey,
			`{"nodeStrategies": [{"name": "a", ` + sel + `, "memoryEvictThresholdPercent": -1}]}`,
			[]string{"nodeStrategies[0].memoryEvictThresholdPercent: Invalid value: -1: must be from 0 to 100"}},
		{"unknown suppress policy", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuSuppressPolicy": "cpus"}}`,
			[]string{`clusterStrategy.cpuSuppressPolicy: Invalid value: "cpus": should be one of [cpuset cfsQuota]`}},
		{"memory lower above threshold", ResourceThresholdConfigKey, `{"clusterStrategy": {"memoryEvictLowerPercent": 75}}`,
			[]string{"clusterStrategy.memoryEvictLowerPercent: Invalid value: 75: must not exceed memoryEvictThresholdPercent (70)"}},
		{"memory lower above a node's threshold", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"memoryEvictLowerPercent": 60}, "nodeStrategies": [{"name": "a", ` + sel + `, "memoryEvictThresholdPercent": 50}]}`,
			[]string{"nodeStrategies[0].memoryEvictLowerPercent: Invalid value: 60: must not exceed memoryEvictThresholdPercent (50)"}},
		{"derived memory lower is clamped at 0", ResourceThresholdConfigKey, `{"clusterStrategy": {"memoryEvictThresholdPercent": 1}}`, nil},
		{"satisfaction lower without upper", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictBESatisfactionLowerPercent": 60}}`,
			[]string{"clusterStrategy.cpuEvictBESatisfactionUpperPercent: Required value"}},
		{"satisfaction upper without lower", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictBESatisfactionUpperPercent": 60}}`,
			[]string{"clusterStrategy.cpuEvictBESatisfactionLowerPercent: Required value"}},
		{"satisfaction lower above upper", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"cpuEvictBESatisfactionLowerPercent": 90, "cpuEvictBESatisfactionUpperPercent": 80}}`,
			[]string{"must not exceed cpuEvictBESatisfactionUpperPercent (80)"}},
		{"allocatable eviction, Koordinator's example", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"enable": true, "cpuAllocatableEvictThresholdPercent": 80, "cpuAllocatableEvictLowerPercent": 60, ` +
				`"memoryAllocatableEvictThresholdPercent": 80, "memoryAllocatableEvictLowerPercent": 80, "allocatableEvictPriorityThreshold": 5999}}`, nil},
		{"allocatable threshold without its lower percent", ResourceThresholdConfigKey, `{"clusterStrategy": {"memoryAllocatableEvictThresholdPercent": 80}}`,
			[]string{"clusterStrategy.memoryAllocatableEvictLowerPercent: Required value: needed with memoryAllocatableEvictThresholdPercent"}},
		{"allocatable lower percent without its threshold", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"cpuAllocatableEvictLowerPercent": 60}, "nodeStrategies": [{"name": "a", ` + sel + `, "memoryAllocatableEvictThresholdPercent": 70, "memoryAllocatableEvictLowerPercent": 60}]}`,
			[]string{"clusterStrategy.cpuAllocatableEvictThresholdPercent: Required value: needed with cpuAllocatableEvictLowerPercent"}},
		{"allocatable lower above a node's threshold", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"cpuAllocatableEvictThresholdPercent": 80, "cpuAllocatableEvictLowerPercent": 70}, "nodeStrategies": [{"name": "a", ` + sel + `, "cpuAllocatableEvictThresholdPercent": 65}]}`,
			[]string{"nodeStrategies[0].cpuAllocatableEvictLowerPercent: Invalid value: 70: must not exceed cpuAllocatableEvictThresholdPercent (65)"}},
		{"allocatable percent 0", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuAllocatableEvictThresholdPercent": 0, "cpuAllocatableEvictLowerPercent": 0}}`,
			[]string{"clusterStrategy.cpuAllocatableEvictThresholdPercent: Invalid value: 0: must be from 1 to 100",
				"clusterStrategy.cpuAllocatableEvictLowerPercent: Invalid value: 0: must be from 1 to 100"}},
		{"allocatable percent above 1000", ResourceThresholdConfigKey, `{"clusterStrategy": {"memoryAllocatableEvictThresholdPercent": 1001, "memoryAllocatableEvictLowerPercent": 90}}`,
			[]string{"clusterStrategy.memoryAllocatableEvictThresholdPercent: Invalid value: 1001: must be from 1 to 1000"}},
		{"allocatable eviction priority beyond a pod's", ResourceThresholdConfigKey, `{"clusterStrategy": {"allocatableEvictPriorityThreshold": 2147483648}}`,
			[]string{"clusterStrategy.allocatableEvictPriorityThreshold: Invalid value: 2147483648: must be from -2147483648 to 2147483647"}},
		{"eviction priority threshold, Koordinator's key", ResourceThresholdConfigKey,
			`{"clusterStrategy": {"enable": true, "memoryEvictThresholdPercent": 70, "evictEnabledPriorityThreshold": 5999}}`, nil},
		{"eviction priority threshold beyond a pod's", ResourceThresholdConfigKey, `{"clusterStrategy": {"evictEnabledPriorityThreshold": -2147483649}}`,
			[]string{"clusterStrategy.evictEnabledPriorityThreshold: Invalid value: -2147483649: must be from -2147483648 to 2147483647"}},
		{"time window zero", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 0}}`,
			[]string{"clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 0: must be from 1 to 3600"}},
		{"override without a name", SystemConfigKey, `{"nodeStrategies": [{` + sel + `}]}`,
			[]string{"nodeStrategies[0].name: Required value"}},
		{"duplicate override names", SystemConfigKey, `{"nodeStrategies": [{"name": "a", ` + sel + `}, {"name": "a", ` + sel + `}]}`,
			[]string{`nodeStrategies[1].name: Duplicate value: "a"`}},
		{"override without a selector", CPUBurstConfigKey, `{"nodeStrategies": [{"name": "a"}]}`,
			[]string{"nodeStrategies[0].nodeSelector: Required value"}},
		{"empty selector matches every node", CPUBurstConfigKey, `{"nodeStrategies": [{"name": "a", "nodeSelector": {}}]}`, nil},
		{"bad selector operator", CPUBurstConfigKey,
			`{"nodeStrategies": [{"name": "a", "nodeSelector": {"matchExpressions": [{"key": "k", "operator": "Is", "values": ["v"]}]}}]}`,
			[]string{`nodeStrategies[0].nodeSelector.matchExpressions[0].operator: Invalid value: "Is"`}},
		{"bad label key", CPUBurstConfigKey, `{"nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"-bad": "v"}}}]}`,
			[]string{"nodeStrategies[0].nodeSelector.matchLabels: Invalid value: \"-bad\""}},
		{"cfs quota burst below 100", CPUBurstConfigKey, `{"clusterStrategy": {"cfsQuotaBurstPercent": 50}}`,
			[]string{"clusterStrategy.cfsQuotaBurstPercent: Invalid value: 50: must be from 100 to 10000"}},
		{"unknown burst policy", CPUBurstConfigKey, `{"clusterStrategy": {"policy": "always"}}`, []string{"should be one of [none cpuBurstOnly cfsQuotaBurstOnly auto]"}},
		{"watermark scale factor too low", SystemConfigKey, `{"clusterStrategy": {"watermarkScaleFactor": 5}}`, []string{"clusterStrategy.watermarkScaleFactor: Invalid value: 5: must be from 10 to 1000"}},
		{"min free kbytes factor 0", SystemConfigKey, `{"clusterStrategy": {"enable": true, "minFreeKbytesFactor": 0}}`, []string{"clusterStrategy.minFreeKbytesFactor: Invalid value: 0: must be from 1 to 1000"}},
		{"min free kbytes factor above 10 %", SystemConfigKey, `{"clusterStrategy": {"minFreeKbytesFactor": 1001}}`, []string{"clusterStrategy.minFreeKbytesFactor: Invalid value: 1001: must be from 1 to 1000"}},
		{"group identity out of range", ResourceQOSConfigKey, `{"clusterStrategy": {"beClass": {"cpuQOS": {"groupIdentity": -2}}}}`,
			[]string{"clusterStrategy.beClass.cpuQOS.groupIdentity: Invalid value: -2"}},
		{"inverted cache range", ResourceQOSConfigKey, `{"clusterStrategy": {"beClass": {"resctrlQOS": {"catRangeStartPercent": 50}}}}`,
			[]string{"clusterStrategy.beClass.resctrlQOS.catRangeStartPercent: Invalid value: 50: must not exceed catRangeEndPercent (30)"}},
		{"network QoS in Koordinator's forms", ResourceQOSConfigKey,
			`{"clusterStrategy": {"beClass": {"networkQOS": {"enable": true, "egressRequest": 10, "egressLimit": "200M", "ingressLimit": "50%"}}}}`, nil},
		{"network QoS values that are no bandwidth", ResourceQOSConfigKey,
			`{"clusterStrategy": {"beClass": {"networkQOS": {"enable": true, "egressLimit": "fast", "egressRequest": 120}}}}`,
			[]string{`clusterStrategy.beClass.networkQOS.egressLimit: Invalid value: "fast": "fast" is neither a percentage nor a bandwidth`,
				`clusterStrategy.beClass.networkQOS.egressRequest: Invalid value: "120": 120 is not a percentage in 0..100`}},
		{"network QoS for LSR", ResourceQOSConfigKey, `{"clusterStrategy": {"lsrClass": {"networkQOS": {"enable": true}}}}`,
			[]string{"clusterStrategy.lsrClass.networkQOS: Forbidden: LSR pods share the LS class's bandwidth"}},
		{"block without type", ResourceQOSConfigKey, `{"clusterStrategy": {"beClass": {"blkioQOS": {"blocks": [{"name": "/dev/vda", "ioCfg": {}}]}}}}`,
			[]string{"clusterStrategy.beClass.blkioQOS.blocks[0].type"}},
		{"colocation percent", ColocationConfigKey, `{"cpuReclaimThresholdPercent": 101, "nodeConfigs": [{"name": "a", ` + sel + `, "memoryReclaimThresholdPercent": -5}]}`,
			[]string{"cpuReclaimThresholdPercent: Invalid value: 101: must be from 0 to 100",
				"nodeConfigs[0].memoryReclaimThresholdPercent: Invalid value: -5: must be from 0 to 100"}},
		{"colocation policy", ColocationConfigKey, `{"cpuCalculatePolicy": "request", "memoryCalculatePolicy": "peak"}`,
			[]string{`cpuCalculatePolicy: Unsupported value: "request"`, `memoryCalculatePolicy: Unsupported value: "peak"`}},
		{"colocation intervals", ColocationConfigKey, `{"metricReportIntervalSeconds": 0, "degradeTimeMinutes": -1, "updateTimeThresholdSeconds": 0, "metricAggregateDurationSeconds": 0}`,
			[]string{"metricReportIntervalSeconds: Invalid value: 0: must be from 1 to 3600", "degradeTimeMinutes: Invalid value: -1: must be from 1 to 1440",
				"updateTimeThresholdSeconds: Invalid value: 0: must be from 1 to 86400", "metricAggregateDurationSeconds: Invalid value: 0: must be from 1 to 3600"}},
		{"colocation window", ColocationConfigKey, `{"metricAggregatePolicy": {"durations": ["5m", "-1m"]}}`,
			[]string{`metricAggregatePolicy.durations[1]: Invalid value: "-1m0s": must be longer than 0s and at most 1h`}},
		// Durations and counts once had no upper bound; these values passed and overflowed time.Duration.
		{"colocation upper bounds", ColocationConfigKey,
			`{"metricReportIntervalSeconds": 3601, "degradeTimeMinutes": 1441, "updateTimeThresholdSeconds": 86401, "metricAggregateDurationSeconds": 3601}`,
			[]string{"metricReportIntervalSeconds: Invalid value: 3601: must be from 1 to 3600", "degradeTimeMinutes: Invalid value: 1441: must be from 1 to 1440",
				"updateTimeThresholdSeconds: Invalid value: 86401: must be from 1 to 86400", "metricAggregateDurationSeconds: Invalid value: 3601: must be from 1 to 3600"}},
		{"colocation at the bounds", ColocationConfigKey,
			`{"metricReportIntervalSeconds": 3600, "degradeTimeMinutes": 1440, "updateTimeThresholdSeconds": 86400, "metricAggregateDurationSeconds": 3600, "metricAggregatePolicy": {"durations": ["1h"]}}`, nil},
		{"degrade time that overflows a duration", ColocationConfigKey, `{"degradeTimeMinutes": 9223372036854775807}`,
			[]string{"degradeTimeMinutes: Invalid value: 9223372036854775807: must be from 1 to 1440"}},
		{"not an integer names the range", ColocationConfigKey, `{"nodeConfigs": [{"name": "a", ` + sel + `, "degradeTimeMinutes": 1e20}]}`,
			[]string{"nodeConfigs.degradeTimeMinutes at line 1, column 105: must be an integer from 1 to 1440, not the JSON number 1e20"}},
		{"report interval not shorter than the degrade time", ColocationConfigKey, `{"degradeTimeMinutes": 5, "metricReportIntervalSeconds": 300}`,
			[]string{"metricReportIntervalSeconds: Invalid value: 300: must be shorter than degradeTimeMinutes (5 min = 300 s)"}},
		{"a node's report interval against the cluster's degrade time", ColocationConfigKey,
			`{"degradeTimeMinutes": 5, "nodeConfigs": [{"name": "a", ` + sel + `, "metricReportIntervalSeconds": 600}]}`,
			[]string{"nodeConfigs[0].metricReportIntervalSeconds: Invalid value: 600: must be shorter than degradeTimeMinutes (5 min = 300 s)"}},
		{"colocation window above an hour", ColocationConfigKey, `{"metricAggregatePolicy": {"durations": ["5m", "61m"]}}`,
			[]string{`metricAggregatePolicy.durations[1]: Invalid value: "1h1m0s": must be longer than 0s and at most 1h`}},
		{"eleven colocation windows", ColocationConfigKey, `{"metricAggregatePolicy": {"durations": ["1m","2m","3m","4m","5m","6m","7m","8m","9m","10m","11m"]}}`,
			[]string{`metricAggregatePolicy.durations: Too many: 11: must have at most 10 items`}},
		{"eviction window above an hour", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 3601}}`,
			[]string{"clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 3601: must be from 1 to 3600"}},
		{"eviction window near the int64 maximum", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 9223372036854775807}}`,
			[]string{"clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 9223372036854775807: must be from 1 to 3600"}},
		{"eviction window not an integer", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 1.5}}`,
			[]string{"clusterStrategy.cpuEvictTimeWindowSeconds at line 1, column 53: must be an integer from 1 to 3600, not the JSON number 1.5"}},
		{"quota burst period above a day", CPUBurstConfigKey, `{"nodeStrategies": [{"name": "a", ` + sel + `, "cfsQuotaBurstPeriodSeconds": 86401}]}`,
			[]string{"nodeStrategies[0].cfsQuotaBurstPeriodSeconds: Invalid value: 86401: must be from -1 to 86400"}},
		{"quota burst period in an embedded struct, not an integer", CPUBurstConfigKey, `{"clusterStrategy": {"cfsQuotaBurstPeriodSeconds": "1d"}}`,
			[]string{"clusterStrategy.cfsQuotaBurstPeriodSeconds at line 1, column 55: must be an integer from -1 to 86400, not a JSON string"}},
		{"burst percent above 10000", CPUBurstConfigKey, `{"clusterStrategy": {"cpuBurstPercent": 10001}}`,
			[]string{"clusterStrategy.cpuBurstPercent: Invalid value: 10001: must be from 0 to 10000"}},
		{"block limit with only a minimum", ResourceQOSConfigKey, `{"clusterStrategy": {"lsClass": {"blkioQOS": {"blocks": [{"name": "a", "type": "device", "ioCfg": {"readIOPS": "x"}}]}}}}`,
			[]string{"clusterStrategy.lsClass.blkioQOS.blocks.ioCfg.readIOPS at line 1, column 114: must be an integer at least 0, not a JSON string"}},
		{"diff threshold", ColocationConfigKey, `{"resourceDiffThreshold": 1.5}`, []string{"resourceDiffThreshold: Invalid value: 1.5: must be a fraction, 0 to 1"}},
		{"host application without name", HostApplicationConfigKey, `{"applications": [{"qos": "LS"}]}`,
			[]string{"applications[0].name: Invalid value: \"\": should be at least 1 chars long"}},
		{"host application duplicate", HostApplicationConfigKey, `{"applications": [{"name": "a"}, {"name": "a"}]}`,
			[]string{`applications[1].name: Duplicate value: "a"`}},
		{"host application bad qos", HostApplicationConfigKey,
			`{"nodeConfigs": [{"name": "n", ` + sel + `, "applications": [{"name": "a", "qos": "GOLD"}]}]}`,
			[]string{`nodeConfigs[0].applications[0].qos: Invalid value: "GOLD"`}},
		{"host application bad cgroup base", HostApplicationConfigKey, `{"applications": [{"name": "a", "cgroupPath": {"base": "/sys"}}]}`,
			[]string{`applications[0].cgroupPath.base: Invalid value: "/sys"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectParse(t, tt.key, tt.value, tt.wantErr) })
	}
}

// expectParse parses value as key: valid when wantErr is empty, else an error starting with the key and mentioning
// each of wantErr.
func expectParse(t *testing.T, key, value string, wantErr []string) {
	t.Helper()
	_, err := ParseKey(key, strings.NewReader(value))
	if len(wantErr) == 0 {
		if err != nil {
			t.Fatalf("want valid, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want an error mentioning %q, got none", wantErr)
	}
	if !strings.HasPrefix(err.Error(), key+": ") {
		t.Errorf("error %q does not start with the key", err)
	}
	for _, w := range wantErr {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n  %s\ndoes not mention\n  %s", err, w)
		}
	}
}

func TestFindings(t *testing.T) {
	tests := []struct {
		name, key, value string
		want             []string
	}{
		{"clean", ResourceThresholdConfigKey, `{"clusterStrategy": {"enable": true}}`, nil},
		{"typo", ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuSupressThresholdPercent": 50}}`,
			[]string{"clusterStrategy.cpuSupressThresholdPercent: unknown field, ignored"}},
		{"case", ResourceThresholdConfigKey, `{"ClusterStrategy": {"Enable": true}}`, []string{
			`ClusterStrategy: matched field "clusterStrategy" ignoring case; write "clusterStrategy"`,
			`ClusterStrategy.Enable: matched field "enable" ignoring case; write "enable"`,
		}},
		{"given twice, once ignoring case", ResourceQOSConfigKey, `{"clusterStrategy": {"beClass": {"cpuQOS": {}, "cpuQoS": {}}}}`, []string{
			`clusterStrategy.beClass.cpuQoS: given again (first as "cpuQOS"); the last value wins`,
			`clusterStrategy.beClass.cpuQoS: matched field "cpuQOS" ignoring case; write "cpuQOS"`,
		}},
		{"unknown key twice", SystemConfigKey, `{"foo": 1, "Foo": {"x": [1]}}`, []string{
			"foo: unknown field, ignored", `Foo: given again (first as "foo"); the last value wins`, "Foo: unknown field, ignored",
		}},
		{"inside lists and selectors", ColocationConfigKey,
			`{"nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabel": {"k": "v"}}, "enabled": true}]}`, []string{
				"nodeConfigs[0].nodeSelector.matchLabel: unknown field, ignored",
				"nodeConfigs[0].enabled: unknown field, ignored",
			}},
		{"map keys are free", HostApplicationConfigKey, `{"applications": [{"name": "a", "cgroupPath": {"relativePath": "x"}}]}`, nil},
		{"map key twice", ColocationConfigKey, `{"nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a", "Pool": "b", "pool": "c"}}}]}`, []string{
			"nodeConfigs[0].nodeSelector.matchLabels.pool: given again; the last value wins",
		}},
		{"fields of embedded strategies", CPUBurstConfigKey,
			`{"nodeStrategies": [{"name": "a", "nodeSelector": {}, "cpuBurstPercent": 10, "sharePoolThresholdPercent": 5, "Policy": "auto"}]}`,
			[]string{`nodeStrategies[0].Policy: matched field "policy" ignoring case; write "policy"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings, err := ParseKey(tt.key, strings.NewReader(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			expectDiff(t, "findings", tt.want, findingStrings(findings))
		})
	}
}

// TestLayering checks defaults < cluster < first matching override, for sparse (NodeSLO) and effective values.
func TestLayering(t *testing.T) {
	s := snapshotOf(t, map[string]string{
		ColocationConfigKey: `{"enable": true, "cpuReclaimThresholdPercent": 50, "nodeConfigs": [
			{"name": "off", "nodeSelector": {"matchLabels": {"colocation": "off"}}, "enable": false},
			{"name": "gpu", "nodeSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, "cpuReclaimThresholdPercent": 30},
			{"name": "gpu-off", "nodeSelector": {"matchLabels": {"gpu": "a100", "colocation": "off"}}, "cpuReclaimThresholdPercent": 10}]}`,
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "memoryEvictThresholdPercent": 80},
			"nodeStrategies": [{"name": "small", "nodeSelector": {"matchLabels": {"size": "small"}}, "memoryEvictThresholdPercent": 60}]}`,
		HostApplicationConfigKey: `{"applications": [{"name": "nginx"}], "nodeConfigs": [
			{"name": "bare", "nodeSelector": {"matchLabels": {"size": "small"}}},
			{"name": "db", "nodeSelector": {"matchLabels": {"role": "db"}}, "applications": [{"name": "mysql", "qos": "LSR"}]}]}`,
	})
	colocation := []struct {
		labels      map[string]string
		wantEnable  bool
		wantPercent int64
	}{
		{nil, true, 50},
		{map[string]string{"colocation": "off"}, false, 50},
		{map[string]string{"gpu": "t4"}, true, 30},
		// Only the first match counts, even when a later override is more specific.
		{map[string]string{"gpu": "a100", "colocation": "off"}, false, 50},
	}
	for _, c := range colocation {
		got := s.Colocation(c.labels)
		if *got.Enable != c.wantEnable || *got.CPUReclaimThresholdPercent != c.wantPercent {
			t.Errorf("labels %v: enable %v, cpuReclaimThresholdPercent %d; want %v, %d", c.labels, *got.Enable,
				*got.CPUReclaimThresholdPercent, c.wantEnable, c.wantPercent)
		}
		if *got.MemoryReclaimThresholdPercent != 65 {
			t.Errorf("labels %v: defaults are not inherited: memoryReclaimThresholdPercent %d", c.labels, *got.MemoryReclaimThresholdPercent)
		}
	}

	for _, c := range []struct {
		key    string
		labels map[string]string
		want   string
	}{
		{ColocationConfigKey, map[string]string{"gpu": "a100", "colocation": "off"}, "off"},
		{ColocationConfigKey, map[string]string{"gpu": "t4"}, "gpu"},
		{ColocationConfigKey, nil, ""},
		{HostApplicationConfigKey, map[string]string{"role": "db"}, "db"},
		{CPUBurstConfigKey, map[string]string{"role": "db"}, ""},
		{"no-such-key", nil, ""},
	} {
		if got := s.Override(c.key, c.labels); got != c.want {
			t.Errorf("Override(%s, %v) = %q, want %q", c.key, c.labels, got, c.want)
		}
	}

	small := map[string]string{"size": "small"}
	wantSmall := &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](60)}
	expectDiff(t, "NodeSLO of a small node shows cluster + override, no defaults", wantSmall, s.NodeSLOSpec(small).ResourceUsedThresholdWithBE)
	if got := *s.NodeSLOSpec(small).WithDefaults().ResourceUsedThresholdWithBE.MemoryEvictLowerPercent; got != 58 {
		t.Errorf("memoryEvictLowerPercent follows the node's own threshold: got %d, want 58", got)
	}
	if got := *s.NodeSLOSpec(nil).WithDefaults().ResourceUsedThresholdWithBE.MemoryEvictLowerPercent; got != 78 {
		t.Errorf("memoryEvictLowerPercent of the cluster: got %d, want 78", got)
	}

	apps := func(l map[string]string) []string {
		var names []string
		for _, a := range s.NodeSLOSpec(l).HostApplications {
			names = append(names, a.Name)
		}
		return names
	}
	expectDiff(t, "cluster applications", []string{"nginx"}, apps(nil))
	if got := apps(small); len(got) != 0 {
		t.Errorf("a node config without applications replaces the list with none, got %v", got)
	}
	expectDiff(t, "db applications", []string{"mysql"}, apps(map[string]string{"role": "db"}))

	// The caller owns what it gets.
	c := s.Colocation(nil)
	*c.Enable = false
	c.MetricAggregatePolicy.Durations[0].Duration = 0
	spec := s.NodeSLOSpec(nil)
	*spec.ResourceUsedThresholdWithBE.Enable = false
	if !*s.Colocation(nil).Enable || s.Colocation(nil).MetricAggregatePolicy.Durations[0].Duration == 0 ||
		!*s.NodeSLOSpec(nil).ResourceUsedThresholdWithBE.Enable {
		t.Error("modifying a returned strategy changed the snapshot")
	}
}

func TestNodeMetricSpec(t *testing.T) {
	s := snapshotOf(t, map[string]string{ColocationConfigKey: `{"metricReportIntervalSeconds": 30,
		"nodeConfigs": [{"name": "a", ` + sel + `, "metricAggregateDurationSeconds": 120, "metricAggregatePolicy": {"durations": ["1m"]}}]}`})
	got := s.NodeMetricSpec(map[string]string{"pool": "a"}).CollectPolicy
	if *got.AggregateDurationSeconds != 120 || *got.ReportIntervalSeconds != 30 || len(got.NodeAggregatePolicy.Durations) != 1 ||
		got.NodeAggregatePolicy.Durations[0].Minutes() != 1 {
		t.Errorf("pool a: got %+v", got)
	}
	got = s.NodeMetricSpec(nil).CollectPolicy
	if *got.AggregateDurationSeconds != 300 || *got.ReportIntervalSeconds != 30 || len(got.NodeAggregatePolicy.Durations) != 3 {
		t.Errorf("cluster: got %+v", got)
	}
}
