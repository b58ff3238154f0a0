package manager

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestSlimPodKeepsRequestsAndLimits: whatever the cache drops, every way of reading a pod's requests and limits
// must give the same answer on the slim pod as on the full one.
func TestSlimPodKeepsRequestsAndLimits(t *testing.T) {
	pods := []*corev1.Pod{
		testutil.Pod("plain").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj(),
		testutil.Pod("init").InitContainer("big", false).Requests("cpu", "2").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("sidecar").InitContainer("side", true).Requests("cpu", "100m").Limits("cpu", "200m").
			InitContainer("big", false).Requests("cpu", "3").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("overhead").Requests("cpu", "1").Limits("cpu", "2").Overhead("cpu", "100m", "memory", "10Mi").Obj(),
		testutil.Pod("podlevel").PodRequests("cpu", "600m", "memory", "1Gi").PodLimits("cpu", "1").Container("a").Obj(),
		testutil.Pod("ext").Requests("example.com/gpu", "1", "hugepages-2Mi", "20Mi", "kubernetes.io/batch-cpu", "500").Obj(),
	}
	resized := testutil.Pod("resized").Requests("cpu", "1").Obj()
	resized.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "c0", Image: "registry/app:1", ImageID: "sha256:abc", Ready: true,
		AllocatedResources: corev1.ResourceList{"cpu": resource.MustParse("2")},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}},
	}}
	resized.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pods = append(pods, resized,
		testutil.Pod("batch-label").Label(slov1alpha1.LabelPriorityClass, "batch").Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
		testutil.Pod("koord-labels").Label(slov1alpha1.LabelPriorityClassAlias, "koord-mid").Label(slov1alpha1.LabelQoSClassAlias, "LSR").Obj(),
		testutil.Pod("unknown-class").Label(slov1alpha1.LabelPriorityClass, "gold").Obj())

	opts := []resourcehelper.PodResourcesOptions{{}, {UseStatusResources: true}, {ExcludeOverhead: true}, {SkipPodLevelResources: true}}
	for _, full := range pods {
		decorate(full)
		slimmed, err := slimPod(full.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim := slimmed.(*corev1.Pod)
		for _, o := range opts {
			if diff := cmp.Diff(resourcehelper.PodRequests(full, o), resourcehelper.PodRequests(slim, o)); diff != "" {
				t.Errorf("%s: requests %+v differ (-full +slim):\n%s", full.Name, o, diff)
			}
			if diff := cmp.Diff(resourcehelper.PodLimits(full, o), resourcehelper.PodLimits(slim, o)); diff != "" {
				t.Errorf("%s: limits %+v differ (-full +slim):\n%s", full.Name, o, diff)
			}
		}
		if slim.Annotations != nil || slim.OwnerReferences != nil {
			t.Errorf("%s: slim pod kept annotations or owner references", full.Name)
		}
		for _, keep := range []bool{
			slim.Name == full.Name, slim.Namespace == full.Namespace, slim.UID == full.UID,
			slim.Labels["app"] == "", slim.Spec.NodeName == full.Spec.NodeName,
			cmp.Equal(slim.Spec.Priority, full.Spec.Priority), slim.Status.Phase == full.Status.Phase,
			slim.DeletionTimestamp.Equal(full.DeletionTimestamp),
			cmp.Equal(slov1alpha1.ClassOf(slim), slov1alpha1.ClassOf(full)),
		} {
			if !keep {
				t.Errorf("%s: slim pod lost identity, node, priority, phase, deletion or class, or kept a label nobody reads", full.Name)
			}
		}
		fullSize, slimSize := jsonSize(t, full), jsonSize(t, slim)
		if slimSize*2 > fullSize {
			t.Errorf("%s: slim pod is %d bytes of %d: the transform does not slim", full.Name, slimSize, fullSize)
		}
	}
}

// decorate gives a pod what real pods carry and no controller reads.
func decorate(p *corev1.Pod) {
	p.Spec.NodeName = "n1"
	p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(make([]byte, 2048))}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["app"] = p.Name
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u"}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:containers":{}}}`)}}
	p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.Env = []corev1.EnvVar{{Name: "A", Value: string(make([]byte, 256))}}
		c.Command = []string{"/bin/app", "--flag=value"}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	}
}

func jsonSize(t *testing.T, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestSlimNodeMetricKeepsWhatPluginsRead(t *testing.T) {
	pod := testutil.Pod("p").Obj()
	full := testutil.NodeMetric("n").Updated(time.Now()).NodeUsage("cpu", "2").SystemUsage("cpu", "500m").
		Pod(pod, "cpu", "1").HostApp("app", "prod", "cpu", "100m").ProdReclaimable("cpu", "1").Obj()
	full.Status.NodeMetric.AggregatedNodeUsages = []slov1alpha1.AggregatedUsage{{Duration: metav1.Duration{Duration: time.Minute}}}
	full.Status.NodeMetric.AggregatedSystemUsages = full.Status.NodeMetric.AggregatedNodeUsages
	got, err := slimNodeMetric(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := full.DeepCopy()
	want.Status.NodeMetric.AggregatedNodeUsages, want.Status.NodeMetric.AggregatedSystemUsages = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slim NodeMetric (-want +got):\n%s", diff)
	}
}
