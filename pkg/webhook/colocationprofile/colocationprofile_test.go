package colocationprofile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/webhook/colocationprofile"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The API server gets config/webhook/colocationprofile.yaml as shipped (failure policy, rules, namespace
// selector), rewritten by envtest only to call the local server with envtest's certificate instead of the Service.
var env = testenv.New(testenv.WithWebhookManifests(filepath.Join("..", "..", "..", "config", "webhook", "colocationprofile.yaml")))

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// webhookServer is the webhook as gleaner-manager runs it (colocationprofile.Register on a manager), with its own
// metrics registry.
type webhookServer struct {
	mgr ctrl.Manager
	reg *prometheus.Registry
}

// startWebhook serves the webhook where envtest's webhook configuration points until the test ends, and waits
// until it serves TLS with synced caches. It also installs config/priorityclasses.
func startWebhook(t *testing.T, e *testenv.Env) *webhookServer {
	t.Helper()
	if out, err := e.Kubectl("apply", "-k", filepath.Join("..", "..", "..", "config", "priorityclasses")).CombinedOutput(); err != nil {
		t.Fatalf("installing config/priorityclasses: %v\n%s", err, out)
	}
	wh := e.Webhook()
	s := &webhookServer{reg: prometheus.NewRegistry()}
	s.mgr = e.StartManager(t, func(mgr ctrl.Manager) error {
		return colocationprofile.Register(context.Background(), mgr, s.reg)
	}, func(o *ctrl.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir})
	})
	testenv.Eventually(t, "the webhook serves TLS", func() error { return s.mgr.GetWebhookServer().StartedChecker()(nil) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !s.mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the manager's caches did not sync")
	}
	return s
}

// count is the value of gleaner_colocation_profile_pods_total{profile, result}.
func (s *webhookServer) count(t *testing.T, profile, result string) float64 {
	t.Helper()
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gleaner_colocation_profile_pods_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["profile"] == profile && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// createProfile creates p and, when s is not nil, waits until the webhook's cache has it; the profile is deleted
// when the test ends.
func createProfile(t *testing.T, e *testenv.Env, s *webhookServer, p *configv1alpha1.ColocationProfile) {
	t.Helper()
	if err := e.Client.Create(context.Background(), p); err != nil {
		t.Fatalf("creating profile %s: %v", p.Name, err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), p) })
	if s != nil {
		testenv.Eventually(t, "the webhook sees profile "+p.Name, func() error {
			return s.mgr.GetClient().Get(context.Background(), client.ObjectKeyFromObject(p), &configv1alpha1.ColocationProfile{})
		})
	}
}

// createNamespace creates a namespace with these labels and, when s is not nil, waits until the webhook's cache has
// it. envtest runs no namespace controller, so it is never really deleted: names are unique per test.
func createNamespace(t *testing.T, e *testenv.Env, s *webhookServer, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := e.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if s != nil {
		testenv.Eventually(t, "the webhook sees namespace "+name, func() error {
			return s.mgr.GetClient().Get(context.Background(), client.ObjectKeyFromObject(ns), &corev1.Namespace{})
		})
	}
}

// dryRun creates pod as a server-side dry run (admission runs, the webhook included; nothing is stored) and
// returns what the API server would store.
func dryRun(t *testing.T, e *testenv.Env, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p := pod.DeepCopy()
	p.UID = ""
	if err := e.Client.Create(context.Background(), p, client.DryRunAll); err != nil {
		t.Fatalf("creating pod %s%s (dry run): %v", p.Name, p.GenerateName, err)
	}
	return p
}

const batchLabel = "gleaner.sh/e2e-colocation"

// etlProfile selects the pods labelled app=etl (or app=spark) in namespaces labelled batchLabel=on.
func etlProfile(name string) *configv1alpha1.ColocationProfile {
	return &configv1alpha1.ColocationProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: configv1alpha1.ColocationProfileSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{batchLabel: "on"}},
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"etl", "spark"}},
			}},
		},
	}
}

// etlPod is a pod as a job owner writes it: cpu and memory, a sidecar and an init container, a prod priority
// class, and the labels of the system the seeds describe saying it is a service.
func etlPod(name, ns string) *corev1.Pod {
	p := testutil.Pod(name).Namespace(ns).PriorityClass("gleaner-prod").
		Label("app", "etl").Label(slov1alpha1.LabelQoSClassAlias, "LS").Label(slov1alpha1.LabelPriorityClass, "prod").
		InitContainer("setup", false).Requests("cpu", "250m", "memory", "64Mi").
		InitContainer("proxy", true).Requests("cpu", "0.1", "memory", "32Mi").Limits("cpu", "100m", "memory", "32Mi").
		Container("main").Requests("cpu", "1500m", "memory", "1Gi").Limits("cpu", "2", "memory", "1536Mi").
		Container("log").Requests("memory", "10M").Obj()
	p.Status = corev1.PodStatus{}
	return p
}

func resources(req, lim corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

func batch(milli, bytes int64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if milli >= 0 {
		l[slov1alpha1.BatchCPU] = *resource.NewQuantity(milli, resource.DecimalSI)
	}
	if bytes >= 0 {
		l[slov1alpha1.BatchMemory] = *resource.NewQuantity(bytes, resource.DecimalSI)
	}
	return l
}

// TestProfileMakesSelectedPodsBatchPods: a pod the profile selects is stored as a batch pod, every field the
// profile translates checked on the stored object; pods it does not select are stored exactly as they would be
// without the webhook.
func TestProfileMakesSelectedPodsBatchPods(t *testing.T) {
	e := env.Start(t)
	s := startWebhook(t, e)
	ctx := context.Background()
	createNamespace(t, e, s, "etl-on", map[string]string{batchLabel: "on"})
	createNamespace(t, e, s, "etl-off", nil)
	p := etlProfile("etl")
	p.Spec.SchedulerName = "batch-scheduler"
	p.Spec.Labels = map[string]string{"gleaner.sh/profile": "etl", "app": "etl-batch"}
	p.Spec.Annotations = map[string]string{"example.com/owner": "data team"}
	createProfile(t, e, s, p)

	pod := e.CreatePod(t, etlPod("etl-1", "etl-on"))
	got := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	wantResources := map[string]corev1.ResourceRequirements{
		"setup": resources(batch(250, 64<<20), nil),
		"proxy": resources(batch(100, 32<<20), batch(100, 32<<20)),
		"main":  resources(batch(1500, 1<<30), batch(2000, 1536<<20)),
		"log":   resources(batch(-1, 10_000_000), nil),
	}
	gotResources := map[string]corev1.ResourceRequirements{}
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		gotResources[c.Name] = c.Resources
	}
	if diff := cmp.Diff(wantResources, gotResources); diff != "" {
		t.Errorf("containers' resources (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"app":                                 "etl-batch", // the profile's labels win over the pod's
		"gleaner.sh/profile":                  "etl",
		configv1alpha1.LabelColocationProfile: "etl", // the mark the profile's status counts by
		slov1alpha1.LabelQoSClass:             "BE",
		slov1alpha1.LabelQoSClassAlias:        "BE",    // kept, agreeing
		slov1alpha1.LabelPriorityClass:        "batch", // a prod label would keep the pod out of the batch band
	}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Annotations["example.com/owner"] != "data team" {
		t.Errorf("annotations %v, want example.com/owner: data team", got.Annotations)
	}
	if got.Spec.PriorityClassName != "gleaner-batch" || ptr.Deref(got.Spec.Priority, 0) != 5000 ||
		ptr.Deref(got.Spec.PreemptionPolicy, "") != corev1.PreemptNever {
		t.Errorf("priority class %q, priority %v, preemption policy %v; want gleaner-batch, 5000, Never (config/priorityclasses)",
			got.Spec.PriorityClassName, ptr.Deref(got.Spec.Priority, -1), ptr.Deref(got.Spec.PreemptionPolicy, ""))
	}
	if got.Spec.SchedulerName != "batch-scheduler" {
		t.Errorf("scheduler %q, want batch-scheduler", got.Spec.SchedulerName)
	}
	if got.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("Kubernetes QoS class %s, want BestEffort (no cpu or memory left)", got.Status.QOSClass)
	}
	if c := slov1alpha1.ClassOf(got); c.Priority != slov1alpha1.PriorityBatch || c.QoS != slov1alpha1.QoSBE {
		t.Errorf("Gleaner classifies the pod as %s/%s, want batch/BE", c.Priority, c.QoS)
	}
	if n := s.count(t, "etl", colocationprofile.ResultApplied); n != 1 {
		t.Errorf("applied count %v, want 1", n)
	}

	// Not selected: the namespace is not labelled, or the pod is not an ETL pod. Stored as written.
	for _, tt := range []struct{ name, ns, app string }{
		{"other-namespace", "etl-off", "etl"},
		{"other-app", "etl-on", "web"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := etlPod(tt.name, tt.ns)
			in.Labels["app"] = tt.app
			expectUnchanged(t, in, dryRun(t, e, in))
		})
	}
	if n := s.count(t, "etl", colocationprofile.ResultApplied); n != 1 {
		t.Errorf("applied count %v after the pods it does not select, want still 1", n)
	}
}

// expectUnchanged fails t when out, the pod as stored, differs from in, as written, in what a profile changes.
func expectUnchanged(t *testing.T, in, out *corev1.Pod) {
	t.Helper()
	if diff := cmp.Diff(in.Labels, out.Labels); diff != "" {
		t.Errorf("labels changed (-written +stored):\n%s", diff)
	}
	for i, c := range out.Spec.Containers {
		if diff := cmp.Diff(in.Spec.Containers[i].Resources, c.Resources); diff != "" {
			t.Errorf("container %s's resources changed (-written +stored):\n%s", c.Name, diff)
		}
	}
	if out.Spec.PriorityClassName != in.Spec.PriorityClassName || out.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("priority class %q and scheduler %q, want %q and default-scheduler", out.Spec.PriorityClassName, out.Spec.SchedulerName, in.Spec.PriorityClassName)
	}
}

// TestSystemNamespacesNeverReachTheWebhook: a profile with no namespace selector selects pods of every namespace
// the webhook sees, but the shipped webhook configuration keeps kube-system and gleaner-system away from it.
func TestSystemNamespacesNeverReachTheWebhook(t *testing.T) {
	e := env.Start(t)
	s := startWebhook(t, e)
	createNamespace(t, e, s, "gleaner-system", nil)
	createNamespace(t, e, s, "any-team", nil)
	p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
		Spec: configv1alpha1.ColocationProfileSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "etl"}}}}
	createProfile(t, e, s, p)
	for _, ns := range []string{"kube-system", "gleaner-system"} {
		out := dryRun(t, e, etlPod("sys", ns))
		if _, ok := out.Labels[slov1alpha1.LabelQoSClass]; ok || out.Spec.PriorityClassName != "gleaner-prod" {
			t.Errorf("a pod in %s was changed: labels %v, priority class %q", ns, out.Labels, out.Spec.PriorityClassName)
		}
	}
	// The same pod elsewhere is selected: the profile itself would have applied.
	if out := dryRun(t, e, etlPod("team", "any-team")); out.Spec.PriorityClassName != "gleaner-batch" {
		t.Errorf("a pod in any-team was not changed (priority class %q): the test proves nothing", out.Spec.PriorityClassName)
	}
}

// TestProbabilityIsAStableHash: with probability 30 about 30% of the pods are made batch pods; the choice for a
// named pod is a hash of the profile, namespace and name, so the same names get the same answers again, and it is
// the answer colocationprofile.Sampled gives. Pods without a name yet (generateName) are split by request.
func TestProbabilityIsAStableHash(t *testing.T) {
	e := env.Start(t)
	s := startWebhook(t, e)
	createNamespace(t, e, s, "sampled", map[string]string{batchLabel: "on"})
	p := etlProfile("thirty")
	p.Spec.Probability = ptr.To[int32](30)
	createProfile(t, e, s, p)

	const n = 200
	chosen := func() map[string]bool {
		out := map[string]bool{}
		for i := range n {
			name := "p-" + strconv.Itoa(i)
			out[name] = dryRun(t, e, etlPod(name, "sampled")).Spec.PriorityClassName == "gleaner-batch"
		}
		return out
	}
	first := chosen()
	picked := 0
	for name, ok := range first {
		if ok {
			picked++
		}
		if want := colocationprofile.Sampled("thirty", "sampled", name, 30); ok != want {
			t.Errorf("pod %s: batch %v, but Sampled says %v", name, ok, want)
		}
	}
	// 200 draws at 30%: 60 expected, standard deviation 6.5. The names are fixed, so the count is too: this only
	// checks that the hash spreads.
	if picked < 40 || picked > 80 {
		t.Errorf("%d of %d pods were made batch pods at probability 30", picked, n)
	}
	if diff := cmp.Diff(first, chosen()); diff != "" {
		t.Errorf("the same pods created again got other answers (-first +second):\n%s", diff)
	}
	if got := s.count(t, "thirty", colocationprofile.ResultNotSampled); got != 0 {
		t.Errorf("dry runs were counted: not-sampled %v", got)
	}

	// Unnamed pods (a Deployment's, a Job's): split by the request's UID. 100 draws at 30%: 30 expected, standard
	// deviation 4.6; outside 10-50 is more than 4 deviations away (odds below 1 in 20,000).
	unnamed := 0
	for range 100 {
		pod := etlPod("", "sampled")
		pod.GenerateName = "etl-"
		if dryRun(t, e, pod).Spec.PriorityClassName == "gleaner-batch" {
			unnamed++
		}
	}
	if unnamed < 10 || unnamed > 50 {
		t.Errorf("%d of 100 unnamed pods were made batch pods at probability 30", unnamed)
	}

	for _, tt := range []struct {
		probability int32
		want        int
	}{{0, 0}, {100, 20}} {
		p.Spec.Probability = ptr.To(tt.probability)
		if err := e.Client.Update(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the webhook sees the new probability", func() error {
			got := &configv1alpha1.ColocationProfile{}
			if err := s.mgr.GetClient().Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if ptr.Deref(got.Spec.Probability, -1) != tt.probability {
				return fmt.Errorf("probability %d", ptr.Deref(got.Spec.Probability, -1))
			}
			return nil
		})
		picked := 0
		for i := range 20 {
			if dryRun(t, e, etlPod("q-"+strconv.Itoa(i), "sampled")).Spec.PriorityClassName == "gleaner-batch" {
				picked++
			}
		}
		if picked != tt.want {
			t.Errorf("probability %d: %d of 20 pods made batch pods, want %d", tt.probability, picked, tt.want)
		}
	}
}

// kubectlCreate creates the pod with kubectl, as a user would, and returns kubectl's output (warnings included)
// and the pod as stored.
func kubectlCreate(t *testing.T, e *testenv.Env, pod *corev1.Pod) (string, *corev1.Pod) {
	t.Helper()
	pod = pod.DeepCopy()
	pod.APIVersion, pod.Kind, pod.UID = "v1", "Pod", ""
	b, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.Kubectl("create", "-o", "json", "-f", "-")
	cmd.Stdin = strings.NewReader(string(b))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl create pod %s: %v\n%s", pod.Name, err, stderr.String())
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	stored := &corev1.Pod{}
	if err := json.Unmarshal([]byte(stdout.String()), stored); err != nil {
		t.Fatalf("parsing kubectl's output: %v\n%s", err, stdout.String())
	}
	return stderr.String(), stored
}

// TestUntranslatablePodsAreAdmittedUnchanged: a selected pod the webhook cannot make a batch pod is created as
// written, and the creator is told why (kubectl prints the admission warning); the pod is counted, and a Warning
// event on the profile says the same.
func TestUntranslatablePodsAreAdmittedUnchanged(t *testing.T) {
	e := env.Start(t)
	s := startWebhook(t, e)
	createNamespace(t, e, s, "untranslatable", map[string]string{batchLabel: "on"})
	createProfile(t, e, s, etlProfile("etl-strict"))
	noClass := etlProfile("etl-no-class")
	noClass.Spec.Selector.MatchExpressions[0].Values = []string{"no-class"}
	noClass.Spec.PriorityClassName = "does-not-exist"
	createProfile(t, e, s, noClass)
	prodClass := etlProfile("etl-prod-class")
	prodClass.Spec.Selector.MatchExpressions[0].Values = []string{"prod-class"}
	prodClass.Spec.PriorityClassName = "gleaner-prod"
	createProfile(t, e, s, prodClass)

	podLevel := etlPod("pod-level", "untranslatable")
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	both := etlPod("both", "untranslatable")
	both.Spec.Containers[0].Resources.Requests[slov1alpha1.BatchCPU] = resource.MustParse("1000")
	missing := etlPod("missing-class", "untranslatable")
	missing.Labels["app"] = "no-class"
	prod := etlPod("prod-class", "untranslatable")
	prod.Labels["app"] = "prod-class"
	tests := []struct {
		name, profile, why string
		pod                *corev1.Pod
	}{
		{"pod-level resources", "etl-strict", "it has pod-level resources (spec.resources), which cannot be expressed in batch resources", podLevel},
		{"cpu and batch-cpu", "etl-strict", `container "main": requests: it asks for both cpu and kubernetes.io/batch-cpu`, both},
		{"missing priority class", "etl-no-class", `priority class not found: "does-not-exist" does not exist`, missing},
		{"priority class outside the batch band", "etl-prod-class", `priority class "gleaner-prod" has the value 9000, outside the batch band 5000-5999`, prod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stored := kubectlCreate(t, e, tt.pod)
			want := fmt.Sprintf("Warning: colocation profile %s selects pod untranslatable/%s but the pod was admitted unchanged: %s", tt.profile, tt.pod.Name, tt.why)
			if !strings.Contains(out, want) {
				t.Errorf("kubectl did not print %q:\n%s", want, out)
			}
			if diff := cmp.Diff(tt.pod.Labels, stored.Labels); diff != "" {
				t.Errorf("labels changed (-written +stored):\n%s", diff)
			}
			if diff := cmp.Diff(tt.pod.Spec.Containers[0].Resources, stored.Spec.Containers[0].Resources); diff != "" {
				t.Errorf("resources changed (-written +stored):\n%s", diff)
			}
			if stored.Spec.PriorityClassName != "gleaner-prod" {
				t.Errorf("priority class %q, want the pod's own gleaner-prod", stored.Spec.PriorityClassName)
			}
			// One event per profile and reason: the events API folds the next ones into its series count.
			testenv.Eventually(t, "a Warning event on the profile", func() error {
				var list eventsv1.EventList
				if err := e.Client.List(context.Background(), &list, client.InNamespace("default")); err != nil {
					return err
				}
				for _, ev := range list.Items {
					if ev.Regarding.Name == tt.profile && ev.Reason == colocationprofile.ReasonPodNotTranslated && ev.Type == corev1.EventTypeWarning &&
						strings.Contains(ev.Note, "colocation profile "+tt.profile+" selects pod untranslatable/") {
						return nil
					}
				}
				return fmt.Errorf("no %s event on %s among %d events", colocationprofile.ReasonPodNotTranslated, tt.profile, len(list.Items))
			})
		})
	}
	if n := s.count(t, "etl-strict", colocationprofile.ResultUntranslatable); n != 2 {
		t.Errorf("untranslatable count of etl-strict %v, want 2", n)
	}
}

// TestInvalidProfilesAreRefused: the CRD's schema refuses a profile the webhook could not apply sensibly, with a
// message naming the field; a minimal profile gets the defaults.
func TestInvalidProfilesAreRefused(t *testing.T) {
	e := env.Start(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "etl"}}
	tests := []struct {
		name string
		spec configv1alpha1.ColocationProfileSpec
		want string
	}{
		{"probability above 100", configv1alpha1.ColocationProfileSpec{Selector: sel, Probability: ptr.To[int32](101)},
			"spec.probability: Invalid value: 101: spec.probability in body should be less than or equal to 100"},
		{"negative probability", configv1alpha1.ColocationProfileSpec{Selector: sel, Probability: ptr.To[int32](-1)},
			"spec.probability: Invalid value: -1: spec.probability in body should be greater than or equal to 0"},
		{"a QoS class other than BE", configv1alpha1.ColocationProfileSpec{Selector: sel, QoSClass: slov1alpha1.QoSLS},
			"spec.qosClass: Invalid value: \"LS\": only BE: a pod on batch resources is best-effort"},
		{"no selector at all", configv1alpha1.ColocationProfileSpec{},
			"spec: Invalid value: set namespaceSelector, selector or both: a profile without either would select every pod of the cluster"},
		{"the QoS label in labels", configv1alpha1.ColocationProfileSpec{Selector: sel, Labels: map[string]string{"koordinator.sh/qosClass": "LS"}},
			"spec.labels: Invalid value: the QoS and priority-class labels are set from qosClass and priorityClassName, not from labels"},
		{"a priority class name that is not a name", configv1alpha1.ColocationProfileSpec{Selector: sel, PriorityClassName: "Batch_Class"},
			`spec.priorityClassName: Invalid value: "Batch_Class": spec.priorityClassName in body should match`},
		{"another profile's mark in labels", configv1alpha1.ColocationProfileSpec{Selector: sel, Labels: map[string]string{configv1alpha1.LabelColocationProfile: "batch"}},
			"spec.labels may set gleaner.sh/colocation-profile only to the profile's own name, which the webhook sets anyway"},
		{"a name too long for a label value", configv1alpha1.ColocationProfileSpec{Selector: sel},
			"a profile's name is at most 63 characters: the pods it makes batch pods carry it as the value of the label gleaner.sh/colocation-profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "invalid"
			if strings.Contains(tt.name, "too long") {
				name = strings.Repeat("x", 64)
			}
			p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tt.spec}
			err := e.Client.Create(context.Background(), p)
			if err == nil {
				_ = e.Client.Delete(context.Background(), p)
				t.Fatalf("created; want the refusal %q", tt.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant an Invalid error containing %q", err, tt.want)
			}
		})
	}

	p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "minimal"}, Spec: configv1alpha1.ColocationProfileSpec{Selector: sel}}
	createProfile(t, e, nil, p)
	// A name of 63 characters, and the mark in labels with the profile's own name (as an earlier sample had it).
	own := strings.Repeat("y", 63)
	createProfile(t, e, nil, &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: own},
		Spec: configv1alpha1.ColocationProfileSpec{Selector: sel, Labels: map[string]string{configv1alpha1.LabelColocationProfile: own}}})
	if p.Spec.QoSClass != slov1alpha1.QoSBE || p.Spec.PriorityClassName != configv1alpha1.DefaultPriorityClassName {
		t.Errorf("defaults: qosClass %q, priorityClassName %q; want BE and %s", p.Spec.QoSClass, p.Spec.PriorityClassName, configv1alpha1.DefaultPriorityClassName)
	}
}

// TestPodsAreCreatedWhileTheWebhookIsDown: with nothing serving the webhook (gleaner-manager down), a pod a profile
// selects is created at once, unchanged: the shipped configuration's failure policy is Ignore.
func TestPodsAreCreatedWhileTheWebhookIsDown(t *testing.T) {
	e := env.Start(t)
	wh := e.Webhook()
	addr := net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("something serves the webhook at %s: the test needs it down", addr)
	}
	createNamespace(t, e, nil, "webhook-down", map[string]string{batchLabel: "on"})
	if out, err := e.Kubectl("apply", "-k", filepath.Join("..", "..", "..", "config", "priorityclasses")).CombinedOutput(); err != nil {
		t.Fatalf("installing config/priorityclasses: %v\n%s", err, out)
	}
	createProfile(t, e, nil, etlProfile("etl-down"))

	in := etlPod("while-down", "webhook-down")
	start := time.Now()
	pod := e.CreatePod(t, in.DeepCopy())
	took := time.Since(start)
	if _, ok := pod.Labels[slov1alpha1.LabelQoSClass]; ok || pod.Spec.PriorityClassName != "gleaner-prod" {
		t.Errorf("the pod was changed with the webhook down: labels %v, priority class %q", pod.Labels, pod.Spec.PriorityClassName)
	}
	if diff := cmp.Diff(in.Spec.Containers[0].Resources, pod.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("resources changed (-written +stored):\n%s", diff)
	}
	t.Logf("created in %s with the webhook down", took)
}
