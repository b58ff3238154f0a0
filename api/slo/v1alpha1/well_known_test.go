package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestPriorityBand(t *testing.T) {
	tests := []struct {
		priority *int32
		want     PriorityClass
	}{
		{nil, PriorityNone},
		{ptr.To[int32](0), PriorityNone},
		{ptr.To[int32](2999), PriorityNone},
		{ptr.To[int32](3000), PriorityFree},
		{ptr.To[int32](3999), PriorityFree},
		{ptr.To[int32](4000), PriorityNone},
		{ptr.To[int32](5000), PriorityBatch},
		{ptr.To[int32](5999), PriorityBatch},
		{ptr.To[int32](6000), PriorityNone},
		{ptr.To[int32](7000), PriorityMid},
		{ptr.To[int32](7999), PriorityMid},
		{ptr.To[int32](9000), PriorityProd},
		{ptr.To[int32](9999), PriorityProd},
		{ptr.To[int32](10000), PriorityNone},
		{ptr.To[int32](2000000000), PriorityNone}, // system-cluster-critical
	}
	for _, tt := range tests {
		if got := priorityBand(tt.priority); got != tt.want {
			t.Errorf("priorityBand(%v) = %q, want %q", ptr.Deref(tt.priority, -1), got, tt.want)
		}
	}
}

// pod builds a pod of one container with the given labels, priority and requests/limits (nil: none), so that its
// Kubernetes QoS class is computed as the API server would.
func pod(labels map[string]string, priority *int32, requests, limits string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Labels = labels
	p.Spec.Priority = priority
	c := corev1.Container{Name: "c"}
	if requests != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(requests), corev1.ResourceMemory: resource.MustParse("1Gi")}
	}
	if limits != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limits), corev1.ResourceMemory: resource.MustParse("1Gi")}
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

func TestClassOf(t *testing.T) {
	const (
		guaranteed = "1" // requests = limits
		burstable  = "500m"
	)
	prio := func(p int32) *int32 { return &p }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want PodClass
	}{
		// The priority-class labels come first.
		{"gleaner priority label over spec.priority",
			pod(map[string]string{LabelPriorityClass: "batch"}, prio(9500), burstable, ""),
			PodClass{Priority: PriorityBatch, QoS: QoSLS, KubeQoS: corev1.PodQOSBurstable}},
		{"gleaner priority label mid", pod(map[string]string{LabelPriorityClass: "mid"}, nil, "", ""),
			PodClass{Priority: PriorityMid, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"gleaner priority label free", pod(map[string]string{LabelPriorityClass: "free"}, nil, "", ""),
			PodClass{Priority: PriorityFree, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"gleaner priority label prod over a BE QoS label",
			pod(map[string]string{LabelPriorityClass: "prod", LabelQoSClass: "BE"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"alias priority label", pod(map[string]string{LabelPriorityClassAlias: "koord-batch"}, prio(9500), guaranteed, guaranteed),
			PodClass{Priority: PriorityBatch, QoS: QoSLSR, KubeQoS: corev1.PodQOSGuaranteed}},
		{"alias koord-prod", pod(map[string]string{LabelPriorityClassAlias: "koord-prod"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"alias koord-mid", pod(map[string]string{LabelPriorityClassAlias: "koord-mid"}, nil, "", ""),
			PodClass{Priority: PriorityMid, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"alias koord-free", pod(map[string]string{LabelPriorityClassAlias: "koord-free"}, nil, "", ""),
			PodClass{Priority: PriorityFree, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"gleaner priority label wins over the alias",
			pod(map[string]string{LabelPriorityClass: "prod", LabelPriorityClassAlias: "koord-batch"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		// An unknown priority-class value makes the pod prod, whatever spec.priority and the QoS class say.
		{"unknown gleaner priority value", pod(map[string]string{LabelPriorityClass: "gold"}, prio(5500), "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort, Unknown: []string{"gleaner.sh/priority-class=gold"}}},
		{"the alias spelling on the gleaner label is unknown",
			pod(map[string]string{LabelPriorityClass: "koord-batch"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort, Unknown: []string{"gleaner.sh/priority-class=koord-batch"}}},
		{"the gleaner spelling on the alias label is unknown",
			pod(map[string]string{LabelPriorityClassAlias: "batch"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort, Unknown: []string{"koordinator.sh/priority-class=batch"}}},
		{"an unknown gleaner label hides a valid alias",
			pod(map[string]string{LabelPriorityClass: "none", LabelPriorityClassAlias: "koord-batch"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort, Unknown: []string{"gleaner.sh/priority-class=none"}}},
		// Then spec.priority.
		{"prod band", pod(nil, prio(9000), "", ""), PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"mid band", pod(nil, prio(7999), burstable, ""), PodClass{Priority: PriorityMid, QoS: QoSLS, KubeQoS: corev1.PodQOSBurstable}},
		{"batch band over a Guaranteed pod", pod(nil, prio(5000), guaranteed, guaranteed),
			PodClass{Priority: PriorityBatch, QoS: QoSLSR, KubeQoS: corev1.PodQOSGuaranteed}},
		{"free band", pod(nil, prio(3999), "", ""), PodClass{Priority: PriorityFree, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"batch band over an LS label", pod(map[string]string{LabelQoSClass: "LS"}, prio(5500), "", ""),
			PodClass{Priority: PriorityBatch, QoS: QoSLS, KubeQoS: corev1.PodQOSBestEffort}},
		// Then the QoS class: label first.
		{"BE label without priority is batch", pod(map[string]string{LabelQoSClass: "BE"}, nil, burstable, ""),
			PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSBurstable}},
		{"alias BE label without priority is batch", pod(map[string]string{LabelQoSClassAlias: "BE"}, nil, guaranteed, guaranteed),
			PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSGuaranteed}},
		{"BE label with a priority outside the bands is batch", pod(map[string]string{LabelQoSClass: "BE"}, prio(0), burstable, ""),
			PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSBurstable}},
		{"LSE label is prod", pod(map[string]string{LabelQoSClass: "LSE"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSLSE, KubeQoS: corev1.PodQOSBestEffort}},
		{"LSR label is prod", pod(map[string]string{LabelQoSClass: "LSR"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSLSR, KubeQoS: corev1.PodQOSBestEffort}},
		{"LS label is prod", pod(map[string]string{LabelQoSClass: "LS"}, prio(2000000000), "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSLS, KubeQoS: corev1.PodQOSBestEffort}},
		{"SYSTEM label is prod", pod(map[string]string{LabelQoSClassAlias: "SYSTEM"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSSystem, KubeQoS: corev1.PodQOSBestEffort}},
		{"gleaner QoS label wins over the alias", pod(map[string]string{LabelQoSClass: "LS", LabelQoSClassAlias: "BE"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSLS, KubeQoS: corev1.PodQOSBestEffort}},
		// An unknown QoS value is ignored: the Kubernetes QoS class decides.
		{"unknown QoS value on a Burstable pod", pod(map[string]string{LabelQoSClass: "gold"}, nil, burstable, ""),
			PodClass{Priority: PriorityProd, QoS: QoSLS, KubeQoS: corev1.PodQOSBurstable, Unknown: []string{"gleaner.sh/qos-class=gold"}}},
		{"case matters", pod(map[string]string{LabelQoSClassAlias: "be"}, nil, "", ""),
			PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort, Unknown: []string{"koordinator.sh/qosClass=be"}}},
		{"both labels unknown", pod(map[string]string{LabelQoSClass: "NONE", LabelPriorityClassAlias: "koord-gold"}, nil, "", ""),
			PodClass{Priority: PriorityProd, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort,
				Unknown: []string{"gleaner.sh/qos-class=NONE", "koordinator.sh/priority-class=koord-gold"}}},
		// Else the Kubernetes QoS class.
		{"Guaranteed is LSR, prod", pod(nil, nil, guaranteed, guaranteed), PodClass{Priority: PriorityProd, QoS: QoSLSR, KubeQoS: corev1.PodQOSGuaranteed}},
		{"Burstable is LS, prod", pod(nil, nil, burstable, ""), PodClass{Priority: PriorityProd, QoS: QoSLS, KubeQoS: corev1.PodQOSBurstable}},
		{"BestEffort is BE, batch", pod(nil, nil, "", ""), PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
		{"BestEffort with a priority outside the bands is batch", pod(nil, prio(1000), "", ""),
			PodClass{Priority: PriorityBatch, QoS: QoSBE, KubeQoS: corev1.PodQOSBestEffort}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// BestEffort has a test of its own, TestClassOfBestEffort.
			if diff := cmp.Diff(tt.want, ClassOf(tt.pod), cmpopts.IgnoreFields(PodClass{}, "BestEffort", "Mid")); diff != "" {
				t.Errorf("ClassOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassOfBestEffort(t *testing.T) {
	const burstable = "100m"
	prio := func(p int32) *int32 { return &p }
	mirror := pod(map[string]string{LabelQoSClass: "BE"}, nil, "", "")
	mirror.Annotations = map[string]string{mirrorAnnotation: "x"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"BE label", pod(map[string]string{LabelQoSClass: "BE"}, nil, "", ""), true},
		{"BE alias label", pod(map[string]string{LabelQoSClassAlias: "BE"}, nil, "", ""), true},
		{"batch band", pod(nil, prio(5500), "", ""), true},
		{"free band", pod(nil, prio(3000), "", ""), true},
		{"LS label", pod(map[string]string{LabelQoSClass: "LS"}, nil, "", ""), false},
		{"prod band, Kubernetes BestEffort", pod(nil, prio(9000), "", ""), false},
		{"prod band, BE label", pod(map[string]string{LabelQoSClass: "BE"}, prio(9000), "", ""), true},
		{"prod band, BE alias label under an unknown gleaner label", pod(map[string]string{LabelQoSClass: "be", LabelQoSClassAlias: "BE"}, prio(9000), "", ""), false},
		{"mid band", pod(nil, prio(7999), "", ""), false},
		{"between bands, burstable: LS", pod(nil, prio(6000), burstable, ""), false},
		{"nothing, burstable: LS", pod(nil, nil, burstable, ""), false},
		{"an unknown class, burstable: LS", pod(map[string]string{LabelQoSClass: "be"}, nil, burstable, ""), false},
		{"Kubernetes BestEffort without a label: BE", pod(nil, nil, "", ""), true},
		{"system-node-critical BestEffort", pod(nil, prio(2000001000), "", ""), false},
		{"static pod's mirror, BE label", mirror, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassOf(tt.pod).BestEffort; got != tt.want {
				t.Errorf("ClassOf(pod).BestEffort = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClassOfMid: the mid tier is evictable after best-effort pods, never when Kubernetes protects the pod, and a
// pod is never both.
func TestClassOfMid(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	mirror := pod(map[string]string{LabelPriorityClass: "mid"}, nil, "", "")
	mirror.Annotations = map[string]string{mirrorAnnotation: "x"}
	critical := pod(map[string]string{LabelPriorityClass: "mid"}, prio(2000000000), "", "")
	tests := []struct {
		name           string
		pod            *corev1.Pod
		mid, evictable bool
	}{
		{"mid band", pod(nil, prio(7000), "", ""), true, true},
		{"mid label over a prod band", pod(map[string]string{LabelPriorityClass: "mid"}, prio(9500), "100m", ""), true, true},
		{"koord-mid alias", pod(map[string]string{LabelPriorityClassAlias: "koord-mid"}, nil, "", ""), true, true},
		{"mid band labelled BE is best-effort, not mid", pod(map[string]string{LabelQoSClass: "BE"}, prio(7000), "", ""), false, true},
		{"batch band", pod(nil, prio(5500), "", ""), false, true},
		{"prod band", pod(nil, prio(9000), "", ""), false, false},
		{"burstable without class: prod", pod(nil, nil, "100m", ""), false, false},
		{"mid label, system-critical priority", critical, false, false},
		{"mid label, static pod's mirror", mirror, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ClassOf(tt.pod)
			if c.Mid != tt.mid || c.Evictable() != tt.evictable {
				t.Errorf("ClassOf(pod) = %+v: Mid %v, Evictable %v; want %v, %v", c, c.Mid, c.Evictable(), tt.mid, tt.evictable)
			}
			if c.Mid && c.BestEffort {
				t.Errorf("ClassOf(pod) = %+v is both mid and best-effort", c)
			}
		})
	}
}

func TestClassOfTakesTheKubernetesQoSClassFromTheStatus(t *testing.T) {
	// The API server sets status.qosClass once, at creation; a resize does not change it.
	p := pod(nil, nil, "500m", "")
	p.Status.QOSClass = corev1.PodQOSGuaranteed
	if got := ClassOf(p); got.QoS != QoSLSR || got.KubeQoS != corev1.PodQOSGuaranteed {
		t.Errorf("ClassOf = %+v, want LSR from status.qosClass Guaranteed", got)
	}
}

func TestEffectivePriority(t *testing.T) {
	tests := []struct {
		priority PriorityClass
		qos      QoSClass
		want     PriorityClass
	}{
		{PriorityProd, QoSBE, PriorityProd},
		{PriorityMid, "", PriorityMid},
		{PriorityBatch, QoSLS, PriorityBatch},
		{PriorityFree, QoSNone, PriorityFree},
		{PriorityNone, QoSBE, PriorityBatch},
		{"", QoSBE, PriorityBatch},
		{PriorityNone, QoSLS, PriorityProd},
		{PriorityNone, QoSLSE, PriorityProd},
		{PriorityNone, QoSLSR, PriorityProd},
		{PriorityNone, QoSSystem, PriorityProd},
		{PriorityNone, QoSNone, PriorityNone},
		{"", "", PriorityNone},
	}
	for _, tt := range tests {
		pm := PodMetricInfo{Priority: tt.priority, QoS: tt.qos}
		app := HostApplicationMetricInfo{Priority: tt.priority, QoS: tt.qos}
		if got := pm.EffectivePriority(); got != tt.want {
			t.Errorf("pod record %q/%q: EffectivePriority = %q, want %q", tt.priority, tt.qos, got, tt.want)
		}
		if got := app.EffectivePriority(); got != tt.want {
			t.Errorf("host application %q/%q: EffectivePriority = %q, want %q", tt.priority, tt.qos, got, tt.want)
		}
	}
}

func TestHighPriority(t *testing.T) {
	for p, want := range map[PriorityClass]bool{
		PriorityProd: true, PriorityMid: true, PriorityNone: true, "": true, PriorityBatch: false, PriorityFree: false,
	} {
		if got := p.HighPriority(); got != want {
			t.Errorf("%q.HighPriority() = %v, want %v", p, got, want)
		}
	}
}
