package sloconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

var anolis = map[string]string{"kubernetes.io/kernel": "anolis"}

// seedValue reads one key's value of one of Koordinator's examples from testdata/seed002.
func seedValue(t testing.TB, example, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seed002", example, key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshotOf applies one ConfigMap to a new Store and returns the snapshot.
func snapshotOf(t testing.TB, data map[string]string) *Snapshot {
	t.Helper()
	return NewStore().Apply(&corev1.ConfigMap{Data: data}).Current
}

// expectDiff reports a difference between want and got, saying what was compared.
func expectDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func findingStrings(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// TestSeed002Examples parses every ConfigMap example of Koordinator's documentation exactly as printed (testdata/seed002/README.md
// says how they were copied) and checks what Gleaner makes of each.
func TestSeed002Examples(t *testing.T) {
	tests := []struct {
		example, key string
		wantErr      string // "" means applied
		wantFindings []string
		check        func(t *testing.T, s *Snapshot)
	}{
		{
			example: "template", key: ColocationConfigKey,
			wantErr: "colocation-config: malformed JSON at line 33, column 1: invalid character '}' after array element",
		},
		{
			example: "template", key: ResourceThresholdConfigKey,
			wantErr: "resource-threshold-config: malformed JSON at line 24, column 1: invalid character ']' after top-level value",
		},
		{
			example: "template", key: ResourceQOSConfigKey,
			wantErr: "resource-qos-config: malformed JSON at line 8, column 13: invalid character '}' looking for beginning of object key string",
		},
		{
			example: "template", key: CPUBurstConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.CPUBurstStrategy{
					CPUBurstConfig: slov1alpha1.CPUBurstConfig{
						Policy: slov1alpha1.CPUBurstNone, CPUBurstPercent: ptr.To[int64](1000),
						CFSQuotaBurstPercent: ptr.To[int64](300), CFSQuotaBurstPeriodSeconds: ptr.To[int64](-1),
					},
					SharePoolThresholdPercent: ptr.To[int64](50),
				}
				expectDiff(t, "cluster cpu burst", want, s.NodeSLOSpec(nil).CPUBurstStrategy)
				want.Policy, want.CFSQuotaBurstPercent = slov1alpha1.CFSQuotaBurstOnly, ptr.To[int64](400)
				expectDiff(t, "anolis cpu burst", want, s.NodeSLOSpec(anolis).CPUBurstStrategy)
			},
		},
		{
			example: "template", key: SystemConfigKey,
			wantErr: `system-config: malformed JSON at line 7, column 5: invalid character '"' after object key:value pair`,
		},
		{
			example: "template", key: HostApplicationConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				want := []slov1alpha1.HostApplicationSpec{{Name: "nginx", QoS: slov1alpha1.QoSLS, CgroupPath: &slov1alpha1.CgroupPath{
					Base: slov1alpha1.CgroupBaseRoot, ParentDir: "host-latency-sensitive/", RelativePath: "nginx/",
				}}}
				expectDiff(t, "host applications", want, s.NodeSLOSpec(anolis).HostApplications)
			},
		},
		{
			example: "quickstart-get", key: ColocationConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				expectDiff(t, "the quick start's colocation-config spells out the defaults", ptr.To(DefaultColocationStrategy()), s.Colocation(nil))
			},
		},
		{
			example: "quickstart-get", key: ResourceThresholdConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(false)}
				expectDiff(t, "threshold", want, s.NodeSLOSpec(nil).ResourceUsedThresholdWithBE)
			},
		},
		{
			example: "quickstart-edit", key: ResourceThresholdConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.ResourceThresholdStrategy{
					Enable: ptr.To(true), CPUSuppressThresholdPercent: ptr.To[int64](60),
					CPUSuppressPolicy: slov1alpha1.CPUSuppressCPUSet, MemoryEvictThresholdPercent: ptr.To[int64](60),
				}
				expectDiff(t, "threshold", want, s.NodeSLOSpec(nil).ResourceUsedThresholdWithBE)
			},
		},
		{
			example: "cpu-evict", key: ResourceThresholdConfigKey,
			wantFindings: []string{`clusterStrategy.CPUEvictTimeWindowSeconds: matched field "cpuEvictTimeWindowSeconds" ignoring case; write "cpuEvictTimeWindowSeconds"`},
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.ResourceThresholdStrategy{
					Enable:                             ptr.To(true),
					CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60),
					CPUEvictBESatisfactionUpperPercent: ptr.To[int64](80),
					CPUEvictBEUsageThresholdPercent:    ptr.To[int64](90),
					CPUEvictTimeWindowSeconds:          ptr.To[int64](60),
				}
				expectDiff(t, "threshold", want, s.NodeSLOSpec(nil).ResourceUsedThresholdWithBE)
			},
		},
		{
			example: "memory-evict", key: ResourceThresholdConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				eff := s.NodeSLOSpec(nil).WithDefaults().ResourceUsedThresholdWithBE
				if *eff.MemoryEvictThresholdPercent != 70 || *eff.MemoryEvictLowerPercent != 68 || !*eff.Enable {
					t.Errorf("want memory eviction on at 70%%, down to 68%%; got %+v", eff)
				}
			},
		},
		{
			example: "repaired", key: ColocationConfigKey,
			wantErr: "colocation-config: [nodeConfigs[1].name: Required value: every node override needs a name, " +
				"nodeConfigs[1].nodeSelector: Required value: an override without a selector matches no node; use {} to match every node]",
		},
		{
			example: "repaired", key: ResourceThresholdConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				if got := *s.NodeSLOSpec(anolis).ResourceUsedThresholdWithBE.CPUEvictBEUsageThresholdPercent; got != 80 {
					t.Errorf("anolis cpuEvictBEUsageThresholdPercent = %d, want 80", got)
				}
				if got := *s.NodeSLOSpec(nil).ResourceUsedThresholdWithBE.CPUEvictBEUsageThresholdPercent; got != 90 {
					t.Errorf("cluster cpuEvictBEUsageThresholdPercent = %d, want 90", got)
				}
				if got := *s.NodeSLOSpec(anolis).ResourceUsedThresholdWithBE.MemoryEvictLowerPercent; got != 65 {
					t.Errorf("anolis inherits memoryEvictLowerPercent: got %d, want 65", got)
				}
			},
		},
		{
			example: "repaired", key: ResourceQOSConfigKey,
			wantFindings: []string{
				`clusterStrategy.lsrClass.cpuQoS: matched field "cpuQOS" ignoring case; write "cpuQOS"`,
				"clusterStrategy.memoryQoS: unknown field, ignored",
				"clusterStrategy.resctrlQOS: unknown field, ignored",
				"lsClass: unknown field, ignored",
				"beClass: unknown field, ignored",
			},
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.ResourceQOSStrategy{LSRClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{
					Enable: ptr.To(false), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](2)},
				}}}
				expectDiff(t, "cluster", want, s.NodeSLOSpec(nil).ResourceQOSStrategy)
				want.BEClass = &slov1alpha1.ResourceQOS{MemoryQOS: &slov1alpha1.MemoryQOSCfg{MemoryQOS: slov1alpha1.MemoryQOS{WmarkRatio: ptr.To[int64](90)}}}
				expectDiff(t, "anolis", want, s.NodeSLOSpec(anolis).ResourceQOSStrategy)
			},
		},
		{
			example: "repaired", key: SystemConfigKey,
			check: func(t *testing.T, s *Snapshot) {
				want := &slov1alpha1.SystemStrategy{MinFreeKbytesFactor: ptr.To[int64](100), WatermarkScaleFactor: ptr.To[int64](150), MemcgReapBackGround: ptr.To[int64](0)}
				expectDiff(t, "system", want, s.NodeSLOSpec(nil).SystemStrategy)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.example+"/"+tt.key, func(t *testing.T) {
			raw := seedValue(t, tt.example, tt.key)
			findings, err := ParseKey(tt.key, strings.NewReader(raw))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("want it applied, got %v", err)
			}
			expectDiff(t, "findings", tt.wantFindings, findingStrings(findings))
			s := snapshotOf(t, map[string]string{tt.key: raw})
			if st := s.Key(tt.key); st.Source != SourceConfigMap || st.Err != nil {
				t.Fatalf("key status %+v, want in force from the ConfigMap", st)
			}
			tt.check(t, s)
		})
	}
}

// TestDefaults checks the documented default of every field: an empty ConfigMap gives them, WithDefaults fills
// them into an empty NodeSLO, and the NodeSLO itself stays empty.
func TestDefaults(t *testing.T) {
	s := snapshotOf(t, nil)
	wantColocation := &ColocationStrategy{
		Enable:                         ptr.To(false),
		MetricAggregateDurationSeconds: ptr.To[int64](300),
		MetricReportIntervalSeconds:    ptr.To[int64](60),
		MetricAggregatePolicy: &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{
			{Duration: 5 * time.Minute}, {Duration: 10 * time.Minute}, {Duration: 15 * time.Minute},
		}},
		CPUReclaimThresholdPercent:    ptr.To[int64](60),
		CPUCalculatePolicy:            ptr.To(CalculateByUsage),
		MemoryReclaimThresholdPercent: ptr.To[int64](65),
		MemoryCalculatePolicy:         ptr.To(CalculateByUsage),
		DegradeTimeMinutes:            ptr.To[int64](15),
		UpdateTimeThresholdSeconds:    ptr.To[int64](300),
		ResourceDiffThreshold:         ptr.To(0.1),
		BatchCPUThresholdPercent:      ptr.To[int64](100),
		BatchMemoryThresholdPercent:   ptr.To[int64](100),
		MidCPUThresholdPercent:        ptr.To[int64](100),
		MidMemoryThresholdPercent:     ptr.To[int64](100),
		MidUnallocatedPercent:         ptr.To[int64](0),
	}
	expectDiff(t, "colocation defaults", wantColocation, s.Colocation(map[string]string{"any": "node"}))
	wantSparse := &slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{},
		ResourceQOSStrategy:         &slov1alpha1.ResourceQOSStrategy{},
		CPUBurstStrategy:            &slov1alpha1.CPUBurstStrategy{},
		SystemStrategy:              &slov1alpha1.SystemStrategy{},
		Extensions:                  &runtime.RawExtension{Raw: []byte("{}")},
	}
	sparse := s.NodeSLOSpec(nil)
	expectDiff(t, "a NodeSLO without configuration shows no values", wantSparse, sparse)
	eff := sparse.WithDefaults()
	wantThreshold := &slov1alpha1.ResourceThresholdStrategy{
		Enable:                          ptr.To(false),
		CPUSuppressThresholdPercent:     ptr.To[int64](65),
		CPUSuppressPolicy:               slov1alpha1.CPUSuppressCPUSet,
		CPUSuppressMinPercent:           ptr.To[int64](0),
		MemoryEvictThresholdPercent:     ptr.To[int64](70),
		MemoryEvictLowerPercent:         ptr.To[int64](68),
		MemoryEvictHoldSeconds:          ptr.To[int64](300),
		CPUEvictBEUsageThresholdPercent: ptr.To[int64](90),
		CPUEvictTimeWindowSeconds:       ptr.To[int64](1),
		CPUEvictPolicy:                  slov1alpha1.CPUEvictByRealLimit,
		PressureEvictWindowSeconds:      ptr.To[int64](10),
	}
	expectDiff(t, "threshold defaults", wantThreshold, eff.ResourceUsedThresholdWithBE)
	expectDiff(t, "cpu burst defaults", slov1alpha1.DefaultCPUBurstStrategy(), eff.CPUBurstStrategy)
	checkDocumentedDefaults(t, eff)
	if d := cmp.Diff(sparse, s.NodeSLOSpec(nil)); d != "" {
		t.Errorf("WithDefaults modified its argument or the snapshot (-before +after):\n%s", d)
	}
	if err := validateFullSpec(eff); err != nil {
		t.Errorf("the defaults do not pass the NodeSLO CRD schema: %v", err)
	}
	for _, k := range s.KeyStatuses() {
		if k.Source != SourceDefault || k.Err != nil {
			t.Errorf("key %s: %+v, want defaults without error", k.Key, k)
		}
	}
}

// checkDocumentedDefaults checks the strategies' defaults against the numbers docs/configuration.md gives.
func checkDocumentedDefaults(t *testing.T, eff *slov1alpha1.NodeSLOSpec) {
	t.Helper()
	b, sys, qos := eff.CPUBurstStrategy, eff.SystemStrategy, eff.ResourceQOSStrategy
	for _, c := range []struct {
		what string
		want bool
		got  any
	}{
		{"cpu burst defaults are none/1000/300/-1/50", b.Policy == slov1alpha1.CPUBurstNone && *b.CPUBurstPercent == 1000 &&
			*b.CFSQuotaBurstPercent == 300 && *b.CFSQuotaBurstPeriodSeconds == -1 && *b.SharePoolThresholdPercent == 50, b},
		{"system defaults are off, 100/150/0", !*sys.Enable && *sys.MinFreeKbytesFactor == 100 && *sys.WatermarkScaleFactor == 150 &&
			*sys.MemcgReapBackGround == 0, sys},
		{"qos defaults are Koordinator's template", *qos.BEClass.CPUQOS.GroupIdentity == -1 && *qos.LSClass.CPUQOS.GroupIdentity == 2 &&
			*qos.BEClass.ResctrlQOS.CATRangeEndPercent == 30 && *qos.BEClass.MemoryQOS.WmarkMinAdj == 50 &&
			*qos.LSRClass.MemoryQOS.WmarkRatio == 95 && !*qos.BEClass.MemoryQOS.Enable, qos},
		{"CPU idle is on for BE alone", *qos.BEClass.CPUQOS.Enable && !*qos.LSClass.CPUQOS.Enable && !*qos.LSRClass.CPUQOS.Enable &&
			!*qos.SystemClass.CPUQOS.Enable, qos},
	} {
		if !c.want {
			t.Errorf("%s, got %+v", c.what, c.got)
		}
	}
}

// validateFullSpec checks a whole NodeSLO spec against the CRD schema, as the API server would.
func validateFullSpec(spec *slov1alpha1.NodeSLOSpec) error {
	var errs field.ErrorList
	root := field.NewPath("spec")
	for prop, v := range map[string]any{
		"resourceUsedThresholdWithBE": spec.ResourceUsedThresholdWithBE, "resourceQOSStrategy": spec.ResourceQOSStrategy,
		"cpuBurstStrategy": spec.CPUBurstStrategy, "systemStrategy": spec.SystemStrategy,
	} {
		errs = append(errs, validateSchema(prop, v, root.Child(prop))...)
	}
	if len(spec.HostApplications) > 0 {
		errs = append(errs, validateSchema("hostApplications", spec.HostApplications, root.Child("hostApplications"))...)
	}
	return errs.ToAggregate()
}
