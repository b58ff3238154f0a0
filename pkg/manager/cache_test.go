package manager

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestSlimPodKeepsWhatIsRead: whatever the cache drops, every reader of a cached pod (allocation's requests,
// limits, counting and Kubernetes QoS class, the node-resource plugins' requests and activity, the class) must give
// the same answer on the slim pod as on the full one, and the slim pod must be a fraction of the full one.
func TestSlimPodKeepsWhatIsRead(t *testing.T) {
	pods := []*corev1.Pod{
		testutil.Pod("plain").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj(),
		testutil.Pod("init").InitContainer("big", false).Requests("cpu", "2").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("sidecar").InitContainer("side", true).Requests("cpu", "100m").Limits("cpu", "200m").
			InitContainer("big", false).Requests("cpu", "3").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("overhead").Requests("cpu", "1").Limits("cpu", "2").Overhead("cpu", "100m", "memory", "10Mi").Obj(),
		testutil.Pod("podlevel").PodRequests("cpu", "600m", "memory", "1Gi").PodLimits("cpu", "1").Container("a").Obj(),
		testutil.Pod("ext").Requests("example.com/gpu", "1", "hugepages-2Mi", "20Mi", "kubernetes.io/batch-cpu", "500").Obj(),
		testutil.Pod("mid").Priority(7500).Requests("kubernetes.io/mid-cpu", "300", "kubernetes.io/mid-memory", "1Gi").Obj(),
		testutil.Pod("succeeded").Phase(corev1.PodSucceeded).Requests("cpu", "4").Obj(),
		testutil.Pod("terminating").Terminating().Phase(corev1.PodRunning).Requests("cpu", "1").Obj(),
		// A static pod's mirror in the batch band: the mirror annotation protects it from being best-effort.
		testutil.Pod("mirror").Priority(5500).Annotation(corev1.MirrorPodAnnotationKey, "hash").Requests("cpu", "1").Obj(),
		testutil.Pod("critical").Priority(2000001000).Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
	}
	resized := testutil.Pod("resized").Requests("cpu", "1").Obj()
	resized.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "c0", Image: "registry/app:1", ImageID: "sha256:abc", Ready: true,
		AllocatedResources: corev1.ResourceList{"cpu": resource.MustParse("2")},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}},
	}}
	resized.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	infeasible := testutil.Pod("infeasible").Requests("cpu", "8").Limits("cpu", "8").StatusRequests("c0", "cpu", "1").Obj()
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	pods = append(pods, resized, infeasible,
		testutil.Pod("batch-label").Label(slov1alpha1.LabelPriorityClass, "batch").Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
		testutil.Pod("koord-labels").Label(slov1alpha1.LabelPriorityClassAlias, "koord-mid").Label(slov1alpha1.LabelQoSClassAlias, "LSR").Obj(),
		testutil.Pod("unknown-class").Label(slov1alpha1.LabelPriorityClass, "gold").Obj())

	opts := []resourcehelper.PodResourcesOptions{{}, {UseStatusResources: true}, {ExcludeOverhead: true}, {SkipPodLevelResources: true},
		{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true}}
	slimmer := newPodSlimmer()
	var fulls, slims []corev1.Pod
	for _, full := range pods {
		decorate(full)
		slimmed, err := slimmer.slim(full.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim := slimmed.(*corev1.Pod)
		fulls, slims = append(fulls, *full), append(slims, *slim)
		for _, o := range opts {
			if diff := cmp.Diff(resourcehelper.PodRequests(full, o), resourcehelper.PodRequests(slim, o)); diff != "" {
				t.Errorf("%s: requests %+v differ (-full +slim):\n%s", full.Name, o, diff)
			}
			if diff := cmp.Diff(resourcehelper.PodLimits(full, o), resourcehelper.PodLimits(slim, o)); diff != "" {
				t.Errorf("%s: limits %+v differ (-full +slim):\n%s", full.Name, o, diff)
			}
		}
		if diff := cmp.Diff(readsOf(full), readsOf(slim)); diff != "" {
			t.Errorf("%s: what the controllers read differs (-full +slim):\n%s", full.Name, diff)
		}
		expectDropped(t, slim)
		fullSize, slimSize := jsonSize(t, full), jsonSize(t, slim)
		if slimSize*2 > fullSize {
			t.Errorf("%s: slim pod is %d bytes of %d: the transform does not slim", full.Name, slimSize, fullSize)
		}
	}
	node := testutil.Node("n1").Allocatable("cpu", "32", "memory", "128Gi", "pods", "110").Obj()
	if diff := cmp.Diff(allocation.Summarize(node, fulls), allocation.Summarize(node, slims)); diff != "" {
		t.Errorf("node summary differs (-full +slim):\n%s", diff)
	}
}

// reads is what the manager's controllers read of a pod, through the functions they read it with.
type reads struct {
	Counted, Active         bool
	QoS                     corev1.PodQOSClass
	Class                   slov1alpha1.PodClass
	Requests, Limits        corev1.ResourceList
	EffRequests, EffLimits  corev1.ResourceList
	PluginRequests          corev1.ResourceList
	PluginCPU, PluginMemory int64
	Name, Namespace, Node   string
	UID                     types.UID
	Priority                *int32
	Phase                   corev1.PodPhase
	Deleting                bool
}

func readsOf(p *corev1.Pod) reads {
	r := reads{Counted: allocation.Counted(p), Active: framework.Active(p), QoS: allocation.QoSClass(p), Class: slov1alpha1.ClassOf(p),
		Name: p.Name, Namespace: p.Namespace, Node: p.Spec.NodeName, UID: p.UID, Priority: p.Spec.Priority, Phase: p.Status.Phase,
		Deleting: p.DeletionTimestamp != nil}
	r.Requests, r.Limits = allocation.PodRequestsAndLimits(p)
	r.EffRequests, r.EffLimits = allocation.EffectivePodRequestsAndLimits(p)
	in := &framework.Input{Pods: []*corev1.Pod{p}}
	r.PluginRequests = in.PodRequests(p)
	r.PluginCPU, r.PluginMemory = in.PodRequest(p, corev1.ResourceCPU), in.PodRequest(p, corev1.ResourceMemory)
	return r
}

// expectDropped fails the test when the slim pod kept what decorate adds and nobody reads.
func expectDropped(t *testing.T, slim *corev1.Pod) {
	t.Helper()
	if slim.Labels["app"] != "" || len(slim.OwnerReferences) > 0 || len(slim.ManagedFields) > 0 || len(slim.Spec.Volumes) > 0 {
		t.Errorf("%s: slim pod kept labels, owner references, managed fields or volumes that nobody reads", slim.Name)
	}
	for _, c := range slices.Concat(slim.Spec.InitContainers, slim.Spec.Containers) {
		if c.Image != "" || c.Env != nil || c.Command != nil || c.VolumeMounts != nil || c.LivenessProbe != nil {
			t.Errorf("%s: slim pod kept image, env, command, mounts or probes of container %s", slim.Name, c.Name)
		}
	}
	for k := range slim.Annotations {
		if k != corev1.MirrorPodAnnotationKey {
			t.Errorf("%s: slim pod kept annotation %s", slim.Name, k)
		}
	}
	for _, st := range slim.Status.ContainerStatuses {
		if st.Resources == nil || st.Image != "" {
			t.Errorf("%s: slim pod kept the status of container %s beyond its resize: %+v", slim.Name, st.Name, st)
		}
	}
}

// TestSlimPodSharesOnlyEqualParts: pods whose kept containers and class labels are equal share one copy of them;
// pods that differ in anything kept (a request, a limit, a container's name or restart policy, a label) do not, and
// slimming a slim pod again (client-go may) changes nothing.
func TestSlimPodSharesOnlyEqualParts(t *testing.T) {
	base := func(name string) *testutil.PodBuilder {
		return testutil.Pod(name).Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2")
	}
	same := base("same").Obj()
	same.Spec.Containers[0].Image, same.Spec.Containers[0].Env = "other:v2", []corev1.EnvVar{{Name: "B", Value: "b"}}
	sidecar := base("sidecar").Obj()
	sidecar.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pods := map[string]*corev1.Pod{
		"first":        base("first").Obj(),
		"same":         same,
		"request":      testutil.Pod("request").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1001m", "memory", "1Gi").Limits("cpu", "2").Obj(),
		"limit":        testutil.Pod("limit").Label(slov1alpha1.LabelPriorityClass, "batch").Container("app").Requests("cpu", "1", "memory", "1Gi").Obj(),
		"name":         testutil.Pod("name").Label(slov1alpha1.LabelPriorityClass, "batch").Container("web").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2").Obj(),
		"sidecar":      sidecar,
		"label":        base("label").Label(slov1alpha1.LabelPriorityClass, "mid").Obj(),
		"second-label": base("second-label").Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
	}
	slimmer := newPodSlimmer()
	slim := map[string]*corev1.Pod{}
	for _, name := range []string{"first", "same", "request", "limit", "name", "sidecar", "label", "second-label"} {
		decorate(pods[name])
		want := pods[name].DeepCopy()
		got, err := slimmer.slim(pods[name])
		if err != nil {
			t.Fatal(err)
		}
		slim[name] = got.(*corev1.Pod)
		if diff := cmp.Diff(want.Spec.Containers[0].Resources, slim[name].Spec.Containers[0].Resources); diff != "" {
			t.Errorf("%s: resources (-full +slim):\n%s", name, diff)
		}
		if diff := cmp.Diff(classLabelsOf(want.Labels), slim[name].Labels); diff != "" {
			t.Errorf("%s: class labels (-full +slim):\n%s", name, diff)
		}
	}
	shared := func(a, b string) bool { return &slim[a].Spec.Containers[0] == &slim[b].Spec.Containers[0] }
	if !shared("first", "same") {
		t.Error("two pods with equal containers (but for image and env) do not share them")
	}
	for _, other := range []string{"request", "limit", "name", "sidecar"} {
		if shared("first", other) {
			t.Errorf("pod %q shares the containers of a pod that differs in them", other)
		}
	}
	sameMap := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !sameMap(slim["first"].Labels, slim["same"].Labels) {
		t.Error("two pods with equal class labels do not share them")
	}
	for _, other := range []string{"label", "second-label"} {
		if sameMap(slim["first"].Labels, slim[other].Labels) {
			t.Errorf("pod %q shares the class labels of a pod with other ones", other)
		}
	}

	again := slim["same"].DeepCopy()
	if got, _ := slimmer.slim(slim["same"]); !cmp.Equal(got, again) || !shared("first", "same") {
		t.Errorf("slimming a slim pod again changed it:\n%s", cmp.Diff(again, got))
	}
}

// classLabelsOf is what the slim pod must keep of labels.
func classLabelsOf(labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range podClassLabels {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func TestInternTableStartsAgainWhenFull(t *testing.T) {
	table := internTable[*int]{max: 2}
	one, two, three := ptr.To(1), ptr.To(2), ptr.To(3)
	if table.get("1", func() *int { return one }) != one || table.get("1", func() *int { return ptr.To(1) }) != one {
		t.Fatal("a value is not shared")
	}
	table.get("2", func() *int { return two })
	if table.get("3", func() *int { return three }) != three || len(table.m) != 1 {
		t.Errorf("a full table holds %d entries after a new one, want 1 (it starts again)", len(table.m))
	}
	if fresh := ptr.To(1); table.get("1", func() *int { return fresh }) != fresh {
		t.Error("a table that started again still returns a value from before")
	}
}

// decorate gives a pod what real pods carry and no controller reads.
func decorate(p *corev1.Pod) {
	p.Spec.NodeName = "n1"
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[corev1.LastAppliedConfigAnnotation] = string(make([]byte, 2048))
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
	// Both forms of the pods' usage, that of an agent one release older and the current one.
	full.Status.PodUsages = testutil.AsPodUsages(full).Status.PodUsages
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
