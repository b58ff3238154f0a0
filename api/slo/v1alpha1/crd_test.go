package v1alpha1_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// roundTrip creates obj, reads it back, writes status through the status subresource, and checks that a plain
// update cannot change the status: the contract every Gleaner writer relies on.
func TestCRDRoundTrip(t *testing.T) {
	c := env.Start(t).Client
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	tests := []struct {
		name        string
		obj         client.Object
		setStatus   func(client.Object)
		clearStatus func(client.Object)
		status      func(client.Object) any
		spec        func(client.Object) any
	}{
		{
			name: "NodeAllocation",
			obj:  &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: "rt-alloc"}},
			setStatus: func(o client.Object) {
				o.(*slov1alpha1.NodeAllocation).Status = slov1alpha1.NodeAllocationStatus{
					Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "hugepages-2Mi": resource.MustParse("0")},
					Requests:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2632m"), "example.com/gpu": resource.MustParse("1")},
					Limits:          corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5110m")},
					RequestsPercent: map[corev1.ResourceName]int64{corev1.ResourceCPU: 65},
					LimitsPercent:   map[corev1.ResourceName]int64{corev1.ResourceCPU: 127},
					PodCount:        21,
					UpdateTime:      &now,
				}
			},
			clearStatus: func(o client.Object) { o.(*slov1alpha1.NodeAllocation).Status = slov1alpha1.NodeAllocationStatus{} },
			status:      func(o client.Object) any { return o.(*slov1alpha1.NodeAllocation).Status },
			spec:        func(o client.Object) any { return o.(*slov1alpha1.NodeAllocation).Spec },
		},
		{
			name: "NodeSLO",
			obj: &slov1alpha1.NodeSLO{
				ObjectMeta: metav1.ObjectMeta{Name: "rt-slo"},
				Spec: slov1alpha1.NodeSLOSpec{
					ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
						Enable:                      ptr.To(true),
						CPUSuppressThresholdPercent: ptr.To[int64](65),
						CPUSuppressPolicy:           slov1alpha1.CPUSuppressCPUSet,
						MemoryEvictThresholdPercent: ptr.To[int64](70),
					},
					ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
						BEClass: &slov1alpha1.ResourceQOS{
							CPUQOS:     &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](-1)}},
							MemoryQOS:  &slov1alpha1.MemoryQOSCfg{MemoryQOS: slov1alpha1.MemoryQOS{WmarkRatio: ptr.To[int64](90)}},
							ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{ResctrlQOS: slov1alpha1.ResctrlQOS{CATRangeEndPercent: ptr.To[int64](30)}},
							BlkIOQOS: &slov1alpha1.BlkIOQOSCfg{BlkIOQOS: slov1alpha1.BlkIOQOS{Blocks: []slov1alpha1.BlockCfg{{
								Name: "/dev/vda", Type: slov1alpha1.BlockDevice, IOCfg: slov1alpha1.IOCfg{ReadBPS: ptr.To[int64](1 << 20)},
							}}}},
						},
					},
					CPUBurstStrategy: &slov1alpha1.CPUBurstStrategy{
						CPUBurstConfig:            slov1alpha1.CPUBurstConfig{Policy: slov1alpha1.CFSQuotaBurstOnly, CFSQuotaBurstPercent: ptr.To[int64](400)},
						SharePoolThresholdPercent: ptr.To[int64](50),
					},
					SystemStrategy: &slov1alpha1.SystemStrategy{MinFreeKbytesFactor: ptr.To[int64](100), WatermarkScaleFactor: ptr.To[int64](150)},
					HostApplications: []slov1alpha1.HostApplicationSpec{{
						Name: "nginx", QoS: slov1alpha1.QoSLS,
						CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseRoot, ParentDir: "host-latency-sensitive/", RelativePath: "nginx/"},
					}},
					Extensions: &runtime.RawExtension{Raw: []byte(`{"example":{"level":3}}`)},
				},
			},
			setStatus:   func(client.Object) {},
			clearStatus: func(o client.Object) { o.(*slov1alpha1.NodeSLO).Status = slov1alpha1.NodeSLOStatus{} },
			status:      func(o client.Object) any { return o.(*slov1alpha1.NodeSLO).Status },
			spec:        func(o client.Object) any { return o.(*slov1alpha1.NodeSLO).Spec },
		},
		{
			name: "NodeMetric",
			obj: &slov1alpha1.NodeMetric{
				ObjectMeta: metav1.ObjectMeta{Name: "rt-metric"},
				Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
					AggregateDurationSeconds: ptr.To[int64](300),
					ReportIntervalSeconds:    ptr.To[int64](60),
					NodeAggregatePolicy:      &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{{Duration: 5 * time.Minute}, {Duration: 15 * time.Minute}}},
				}},
			},
			setStatus: func(o client.Object) {
				usage := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("3Gi")}
				o.(*slov1alpha1.NodeMetric).Status = slov1alpha1.NodeMetricStatus{
					UpdateTime: &now,
					NodeMetric: &slov1alpha1.NodeMetricInfo{
						NodeUsage:   usage,
						SystemUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
						AggregatedNodeUsages: []slov1alpha1.AggregatedUsage{{
							Duration: metav1.Duration{Duration: 5 * time.Minute},
							Usage:    map[slov1alpha1.AggregationType]corev1.ResourceList{slov1alpha1.AggregationP99: usage, slov1alpha1.AggregationAvg: usage},
						}},
					},
					PodsMetric: []slov1alpha1.PodMetricInfo{{
						Name: "web-0", Namespace: "default", UID: "0b7c", Priority: slov1alpha1.PriorityProd, QoS: slov1alpha1.QoSLS, Usage: usage,
					}},
					PodUsages: []slov1alpha1.PodUsage{
						{UID: "0b7c", CPUMillis: 1500, MemoryBytes: 3 << 30},
						{UID: "1c8d", Priority: slov1alpha1.PriorityBatch, CPUMillis: 0, MemoryBytes: 0},
					},
					HostApplicationMetric: []slov1alpha1.HostApplicationMetricInfo{{Name: "nginx", QoS: slov1alpha1.QoSLS, Usage: usage}},
					ProdReclaimableMetric: &slov1alpha1.ReclaimableMetric{Resource: usage},
				}
			},
			clearStatus: func(o client.Object) { o.(*slov1alpha1.NodeMetric).Status = slov1alpha1.NodeMetricStatus{} },
			status:      func(o client.Object) any { return o.(*slov1alpha1.NodeMetric).Status },
			spec:        func(o client.Object) any { return o.(*slov1alpha1.NodeMetric).Spec },
		},
		{
			name: "NodeResourceExplanation",
			obj:  &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: "rt-explanation"}},
			setStatus: func(o client.Object) {
				v := resource.MustParse("3k")
				o.(*slov1alpha1.NodeResourceExplanation).Status = slov1alpha1.NodeResourceExplanationStatus{
					UpdateTime: now, Strategy: "nodeConfigs gray",
					Resources: []slov1alpha1.ResourceDerivation{
						{
							Resource: slov1alpha1.BatchCPU, Plugin: "batch", Value: &v, Formula: "capacity - used", MetricTime: &now,
							Terms:    []slov1alpha1.DerivationTerm{{Name: "capacity", Value: resource.MustParse("4"), Detail: "node status.capacity"}},
							Zones:    map[string]resource.Quantity{"node-0": resource.MustParse("1500")},
							Warnings: []string{"clamped"},
						},
						{Resource: slov1alpha1.MidCPU, Plugin: "mid", Reason: "NodeMetric n reports no prod reclaimable resources"},
					},
				}
			},
			clearStatus: func(o client.Object) {
				o.(*slov1alpha1.NodeResourceExplanation).Status = slov1alpha1.NodeResourceExplanationStatus{}
			},
			status: func(o client.Object) any { return o.(*slov1alpha1.NodeResourceExplanation).Status },
			spec:   func(o client.Object) any { return o.(*slov1alpha1.NodeResourceExplanation).Spec },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			obj := tt.obj.DeepCopyObject().(client.Object)
			if err := c.Create(ctx, obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })

			got := tt.obj.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(tt.spec(tt.obj), tt.spec(got), quantityCmp); diff != "" {
				t.Errorf("spec read back differs (-created +read):\n%s", diff)
			}

			want := got.DeepCopyObject().(client.Object)
			tt.setStatus(want)
			if err := c.Status().Update(ctx, want); err != nil {
				t.Fatalf("status update: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("get after status update: %v", err)
			}
			if diff := cmp.Diff(tt.status(want), tt.status(got), quantityCmp); diff != "" {
				t.Errorf("status read back differs (-written +read):\n%s", diff)
			}

			// A plain update carries an emptied status; the status subresource must keep the stored one.
			plain := got.DeepCopyObject().(client.Object)
			tt.clearStatus(plain)
			if err := c.Update(ctx, plain); err != nil {
				t.Fatalf("plain update: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("get after plain update: %v", err)
			}
			if diff := cmp.Diff(tt.status(want), tt.status(got), quantityCmp); diff != "" {
				t.Errorf("a plain update changed the status (-before +after):\n%s", diff)
			}
		})
	}
}

var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// TestCRDSchemaRejects checks that the real API server enforces the generated OpenAPI schema, so a hand-edited
// object with an out-of-range or unknown value is refused instead of reaching the agent.
func TestCRDSchemaRejects(t *testing.T) {
	c := env.Start(t).Client
	tests := []struct {
		name      string
		obj       client.Object
		wantField string
	}{
		{
			name: "percentage above 100",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-percent"}, Spec: slov1alpha1.NodeSLOSpec{
				ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUSuppressThresholdPercent: ptr.To[int64](150)},
			}},
			wantField: "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent",
		},
		{
			name: "unknown suppress policy",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-policy"}, Spec: slov1alpha1.NodeSLOSpec{
				ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUSuppressPolicy: "freeze"},
			}},
			wantField: "spec.resourceUsedThresholdWithBE.cpuSuppressPolicy",
		},
		{
			name: "group identity out of range",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-gi"}, Spec: slov1alpha1.NodeSLOSpec{
				ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{LSClass: &slov1alpha1.ResourceQOS{
					CPUQOS: &slov1alpha1.CPUQOSCfg{CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To[int64](7)}},
				}},
			}},
			wantField: "spec.resourceQOSStrategy.lsClass.cpuQOS.groupIdentity",
		},
		{
			name: "zero report interval",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-interval"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](0)},
			}},
			wantField: "spec.metricCollectPolicy.reportIntervalSeconds",
		},
		{
			// At least 1 was once the only bound; 10^10 s overflows time.Duration on the agent.
			name: "eviction window above an hour",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-window"}, Spec: slov1alpha1.NodeSLOSpec{
				ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUEvictTimeWindowSeconds: ptr.To[int64](1e10)},
			}},
			wantField: "spec.resourceUsedThresholdWithBE.cpuEvictTimeWindowSeconds: Invalid value: 10000000000: spec.resourceUsedThresholdWithBE.cpuEvictTimeWindowSeconds in body should be less than or equal to 3600",
		},
		{
			name: "allocatable eviction percent 0",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-allocatable"}, Spec: slov1alpha1.NodeSLOSpec{
				ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUAllocatableEvictThresholdPercent: ptr.To[int64](0)},
			}},
			wantField: "spec.resourceUsedThresholdWithBE.cpuAllocatableEvictThresholdPercent",
		},
		{
			name: "quota burst period above a day",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-burst-period"}, Spec: slov1alpha1.NodeSLOSpec{
				CPUBurstStrategy: &slov1alpha1.CPUBurstStrategy{CPUBurstConfig: slov1alpha1.CPUBurstConfig{CFSQuotaBurstPeriodSeconds: ptr.To[int64](86401)}},
			}},
			wantField: "spec.cpuBurstStrategy.cfsQuotaBurstPeriodSeconds",
		},
		{
			name: "burst percent above 10000",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-burst-percent"}, Spec: slov1alpha1.NodeSLOSpec{
				CPUBurstStrategy: &slov1alpha1.CPUBurstStrategy{CPUBurstConfig: slov1alpha1.CPUBurstConfig{CPUBurstPercent: ptr.To[int64](10001)}},
			}},
			wantField: "spec.cpuBurstStrategy.cpuBurstPercent",
		},
		{
			name: "report interval above an hour",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-interval-max"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](3601)},
			}},
			wantField: "spec.metricCollectPolicy.reportIntervalSeconds",
		},
		{
			name: "aggregate duration above an hour",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-aggregate"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](3601)},
			}},
			wantField: "spec.metricCollectPolicy.aggregateDurationSeconds",
		},
		{
			name: "aggregation window above an hour",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-window-2h"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{
					Durations: []metav1.Duration{{Duration: 5 * time.Minute}, {Duration: 2 * time.Hour}}}},
			}},
			wantField: "spec.metricCollectPolicy.nodeAggregatePolicy.durations: Invalid value: each duration must be longer than 0s and at most 1h",
		},
		{
			name: "zero aggregation window",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-window-0"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{
					Durations: []metav1.Duration{{Duration: 0}}}},
			}},
			wantField: "each duration must be longer than 0s and at most 1h",
		},
		{
			name: "eleven aggregation windows",
			obj: &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bad-window-count"}, Spec: slov1alpha1.NodeMetricSpec{
				CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{
					Durations: func() []metav1.Duration {
						var d []metav1.Duration
						for i := 1; i <= 11; i++ {
							d = append(d, metav1.Duration{Duration: time.Duration(i) * time.Minute})
						}
						return d
					}()}},
			}},
			wantField: "spec.metricCollectPolicy.nodeAggregatePolicy.durations: Too many: 11: must have at most 10 items",
		},
		{
			name: "duplicate host application",
			obj: &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "bad-hostapp"}, Spec: slov1alpha1.NodeSLOSpec{
				HostApplications: []slov1alpha1.HostApplicationSpec{{Name: "nginx"}, {Name: "nginx"}},
			}},
			wantField: "spec.hostApplications",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(context.Background(), tt.obj)
			if err == nil {
				_ = c.Delete(context.Background(), tt.obj)
				t.Fatal("the API server accepted an object the schema forbids")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("error does not name %s: %v", tt.wantField, err)
			}
		})
	}
}

// TestEveryKindIsInTheGleanerCategory: `kubectl get gleaner` lists every kind Gleaner installs, because the API
// server's discovery puts each in the category gleaner.
func TestEveryKindIsInTheGleanerCategory(t *testing.T) {
	e := env.Start(t)
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if slices.Contains(r.Categories, "gleaner") {
				got = append(got, r.Kind)
			}
		}
	}
	slices.Sort(got)
	want := []string{"ColocationProfile", "NodeAllocation", "NodeMetric", "NodeResourceExplanation", "NodeSLO"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kinds in the category gleaner (-want +got):\n%s", d)
	}
}
