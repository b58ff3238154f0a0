package manager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/watch"

	kjson "sigs.k8s.io/json"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// BenchmarkNodeMetricDecode is what the manager's informer spends on one NodeMetric update before any of its own
// code runs, for the forms a report could take: decoding the watch event (the envelope, a pass for apiVersion and
// kind, then the object, as client-go's JSON serializer does) of a node with 30 pods as hack/bench/noderesource
// writes them, with the managed fields the API server adds. B/event is the event's size.
//
//   - podsMetric: the report as agents wrote it before the compact report: every pod's name, namespace, UID, priority, QoS and
//     usage as a resource list.
//   - podUsages: the report as agents write it since: every pod's UID, priority when not prod, CPU millicores and
//     memory bytes as integers (status.podUsages).
//   - cbor: the podsMetric report in CBOR, the object alone without the envelope (the API server's alpha
//     CBORServingAndStorage gate and client-go's alpha ClientsAllowCBOR; neither is on in a production cluster).
//   - the candidates not taken, decoded by the same steps: podUsages with each pod's name and namespace too
//     (candidate-named), podsMetric records of UID and resource list only (candidate-uid-usage), and no per-pod
//     records at all (candidate-no-pods, the floor of any report that keeps the node's own figures).
func BenchmarkNodeMetricDecode(b *testing.B) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := slov1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	gvk := slov1alpha1.GroupVersion.WithKind("NodeMetric")
	codec := serializer.NewCodecFactory(scheme).UniversalDeserializer()

	variants := []struct {
		name    string
		obj     any
		decoder runtime.Decoder
		into    func() runtime.Object
	}{
		{"podsMetric", decodeFixture(now), codec, func() runtime.Object { return &slov1alpha1.NodeMetric{} }},
		{"podUsages", testutil.AsPodUsages(decodeFixture(now)), codec, func() runtime.Object { return &slov1alpha1.NodeMetric{} }},
		{"candidate-named", namedFixture(now), looseDecoder{gvk}, func() runtime.Object { return &candidate[namedStatus]{} }},
		{"candidate-uid-usage", uidUsageFixture(now), looseDecoder{gvk}, func() runtime.Object { return &candidate[uidUsageStatus]{} }},
		{"candidate-no-pods", noPodsFixture(now), looseDecoder{gvk}, func() runtime.Object { return &candidate[slov1alpha1.NodeMetricStatus]{} }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			event := watchEvent(b, v.obj)
			b.ReportAllocs()
			for b.Loop() {
				var ev metav1.WatchEvent
				if err := json.Unmarshal(event, &ev); err != nil {
					b.Fatal(err)
				}
				if _, _, err := v.decoder.Decode(ev.Object.Raw, nil, v.into()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(event)), "B/event")
		})
	}
	b.Run("cbor", func(b *testing.B) {
		s := cbor.NewSerializer(scheme, scheme)
		var buf bytes.Buffer
		if err := s.Encode(decodeFixture(now), &buf); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.Decode(buf.Bytes(), nil, &slov1alpha1.NodeMetric{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "B/event")
	})
}

// The podUsages report decodes to what the manager reads of the podsMetric one: the benchmark measures the same
// content in two forms.
func TestDecodeFixturesAgree(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	old, compact := decodeFixture(now), testutil.AsPodUsages(decodeFixture(now))
	if old.Status.PodRecords() != 30 || compact.Status.PodRecords() != 30 || len(compact.Status.PodsMetric) != 0 {
		t.Fatalf("records: %d and %d", old.Status.PodRecords(), compact.Status.PodRecords())
	}
	for i := range old.Status.PodRecords() {
		o, c := old.Status.PodRecord(i), compact.Status.PodRecord(i)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			oq, _ := o.Usage(r)
			cq, _ := c.Usage(r)
			if o.UID != c.UID || o.Priority != c.Priority || oq.Cmp(cq) != 0 {
				t.Errorf("record %d: %+v against %+v", i, o, c)
			}
		}
	}
}

// looseDecoder decodes a candidate report shape that is not in the scheme the way client-go's JSON serializer
// does: a pass for apiVersion and kind, then the object.
type looseDecoder struct{ gvk schema.GroupVersionKind }

func (d looseDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, nil, err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
		return nil, nil, err
	}
	return into, &d.gvk, nil
}

func watchEvent(b *testing.B, obj any) []byte {
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	event, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		b.Fatal(err)
	}
	return event
}

// decodeFixture is a NodeMetric as the API server sends it for hack/bench/noderesource's nodes.
func decodeFixture(now time.Time) *slov1alpha1.NodeMetric {
	q := resource.MustParse
	t := metav1.NewTime(now)
	nm := &slov1alpha1.NodeMetric{
		TypeMeta:   metav1.TypeMeta{APIVersion: slov1alpha1.GroupVersion.String(), Kind: "NodeMetric"},
		ObjectMeta: decodeFixtureMeta(now),
		Status: slov1alpha1.NodeMetricStatus{
			UpdateTime: &t,
			NodeMetric: &slov1alpha1.NodeMetricInfo{
				NodeUsage:   corev1.ResourceList{"cpu": q("12"), "memory": q("60Gi")},
				SystemUsage: corev1.ResourceList{"cpu": q("1500m"), "memory": q("4Gi")},
			},
			ProdReclaimableMetric: &slov1alpha1.ReclaimableMetric{Resource: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi")}},
		},
	}
	for k := range 30 {
		nm.Status.PodsMetric = append(nm.Status.PodsMetric, slov1alpha1.PodMetricInfo{
			Name: fmt.Sprintf("pod-%05d-%02d", 1234, k), Namespace: fmt.Sprintf("ns-%d", k%20),
			UID: fmt.Sprintf("4b1e6d2c-%04d-4000-8000-%012d", k, 1234), Priority: decodePriority(k), QoS: slov1alpha1.QoSLS,
			Usage: corev1.ResourceList{"cpu": *resource.NewMilliQuantity(int64(50+k%7*20), resource.DecimalSI),
				"memory": *resource.NewQuantity(int64(96+k%5*32)<<20, resource.BinarySI)},
		})
	}
	return nm
}

func decodePriority(k int) slov1alpha1.PriorityClass {
	switch k % 10 {
	case 6:
		return slov1alpha1.PriorityMid
	case 7, 8:
		return slov1alpha1.PriorityBatch
	}
	return slov1alpha1.PriorityProd
}

func decodeFixtureMeta(now time.Time) metav1.ObjectMeta {
	t := metav1.NewTime(now)
	return metav1.ObjectMeta{
		Name: "node-01234", ResourceVersion: "1234567", Generation: 1, UID: "4b1e6d2c-0000-4000-8000-000000001234",
		CreationTimestamp: t,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-01234",
			UID: "0d1e6d2c-0000-4000-8000-000000001234"}},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "gleaner-manager", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "slo.gleaner.sh/v1alpha1",
				Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
					`{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"0d1e6d2c-0000-4000-8000-000000001234\"}":{}}},"f:spec":{"f:metricCollectPolicy":{"f:aggregateDurationSeconds":{},"f:reportIntervalSeconds":{}}}}`)},
			{Manager: "gleaner-agent", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "slo.gleaner.sh/v1alpha1",
				Time: &t, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: metav1.NewFieldsV1(
					`{"f:status":{".":{},"f:nodeMetric":{".":{},"f:nodeUsage":{".":{},"f:cpu":{},"f:memory":{}},"f:systemUsage":{".":{},"f:cpu":{},"f:memory":{}}},"f:podsMetric":{},"f:prodReclaimableMetric":{".":{},"f:resource":{".":{},"f:cpu":{},"f:memory":{}}},"f:updateTime":{}}}`)},
		},
	}
}

// candidate is a NodeMetric with another status shape, for measuring shapes not taken.
type candidate[S any] struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              slov1alpha1.NodeMetricSpec `json:"spec,omitempty"`
	Status            S                          `json:"status,omitempty"`
}

func (c *candidate[S]) DeepCopyObject() runtime.Object { return c }

type uidUsageStatus struct {
	UpdateTime            *metav1.Time                   `json:"updateTime,omitempty"`
	NodeMetric            *slov1alpha1.NodeMetricInfo    `json:"nodeMetric,omitempty"`
	PodsMetric            []uidUsage                     `json:"podsMetric,omitempty"`
	ProdReclaimableMetric *slov1alpha1.ReclaimableMetric `json:"prodReclaimableMetric,omitempty"`
}

type uidUsage struct {
	UID   string              `json:"uid,omitempty"`
	Usage corev1.ResourceList `json:"usage,omitempty"`
}

func uidUsageFixture(now time.Time) *candidate[uidUsageStatus] {
	full := decodeFixture(now)
	c := &candidate[uidUsageStatus]{TypeMeta: full.TypeMeta, ObjectMeta: full.ObjectMeta, Status: uidUsageStatus{
		UpdateTime: full.Status.UpdateTime, NodeMetric: full.Status.NodeMetric, ProdReclaimableMetric: full.Status.ProdReclaimableMetric}}
	for _, pm := range full.Status.PodsMetric {
		c.Status.PodsMetric = append(c.Status.PodsMetric, uidUsage{UID: pm.UID, Usage: pm.Usage})
	}
	return c
}

func noPodsFixture(now time.Time) *candidate[slov1alpha1.NodeMetricStatus] {
	full := decodeFixture(now)
	full.Status.PodsMetric = nil
	return &candidate[slov1alpha1.NodeMetricStatus]{TypeMeta: full.TypeMeta, ObjectMeta: full.ObjectMeta, Status: full.Status}
}

type namedStatus struct {
	UpdateTime            *metav1.Time                   `json:"updateTime,omitempty"`
	NodeMetric            *slov1alpha1.NodeMetricInfo    `json:"nodeMetric,omitempty"`
	PodUsages             []namedPod                     `json:"podUsages,omitempty"`
	ProdReclaimableMetric *slov1alpha1.ReclaimableMetric `json:"prodReclaimableMetric,omitempty"`
}

type namedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	slov1alpha1.PodUsage
}

func namedFixture(now time.Time) *candidate[namedStatus] {
	full := decodeFixture(now)
	c := &candidate[namedStatus]{TypeMeta: full.TypeMeta, ObjectMeta: full.ObjectMeta, Status: namedStatus{
		UpdateTime: full.Status.UpdateTime, NodeMetric: full.Status.NodeMetric, ProdReclaimableMetric: full.Status.ProdReclaimableMetric}}
	for _, pm := range full.Status.PodsMetric {
		c.Status.PodUsages = append(c.Status.PodUsages, namedPod{Namespace: pm.Namespace, Name: pm.Name,
			PodUsage: slov1alpha1.NewPodUsage(pm.UID, pm.EffectivePriority(), pm.Usage, nil)})
	}
	return c
}
