package colocationprofile_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/colocationprofile"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixture is one running controller against the package's API server.
type fixture struct {
	t     *testing.T
	e     *testenv.Env
	clock *clocktesting.FakeClock
}

// startController runs the controller alone in a manager of its own until the test ends, with cfg (its clock set to
// the fixture's), after installing config/priorityclasses' classes.
func startController(t *testing.T, cfg colocationprofile.Config) *fixture {
	t.Helper()
	e := env.Start(t)
	for _, pc := range testutil.PriorityClasses() {
		if err := e.Client.Create(context.Background(), pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, e: e, clock: clocktesting.NewFakeClock(epoch)}
	cfg.Clock = f.clock
	e.StartManager(t, colocationprofile.New(cfg).SetupWithManager)
	return f
}

// createProfile creates a profile selecting app=name, changed by edit, and deletes it when the test ends.
func (f *fixture) createProfile(name string, edit func(*configv1alpha1.ColocationProfileSpec)) *configv1alpha1.ColocationProfile {
	f.t.Helper()
	p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1alpha1.ColocationProfileSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
	}}
	if edit != nil {
		edit(&p.Spec)
	}
	if err := f.e.Client.Create(context.Background(), p); err != nil {
		f.t.Fatalf("creating profile %s: %v", name, err)
	}
	f.t.Cleanup(func() { _ = f.e.Client.Delete(context.Background(), p) })
	return p
}

// update changes the spec of the profile named name and returns its new generation.
func (f *fixture) update(name string, edit func(*configv1alpha1.ColocationProfileSpec)) int64 {
	f.t.Helper()
	p := &configv1alpha1.ColocationProfile{}
	if err := f.e.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		f.t.Fatal(err)
	}
	edit(&p.Spec)
	if err := f.e.Client.Update(context.Background(), p); err != nil {
		f.t.Fatalf("updating profile %s: %v", name, err)
	}
	return p.Generation
}

// profilePod is a pod the webhook made a batch pod for profile: it carries the profile's label. Without node it
// waits for one.
func profilePod(name, profile, node string, phase corev1.PodPhase) *corev1.Pod {
	b := testutil.Pod(name).Node(node).Phase(phase).Container("app").Requests("kubernetes.io/batch-cpu", "500")
	if profile != "" {
		b = b.Label(configv1alpha1.LabelColocationProfile, profile)
	}
	return b.Obj()
}

// status is what the tests compare of a profile's status: its numbers and its Valid condition, without times.
type status struct {
	ObservedGeneration, ConditionGeneration int64
	MatchedPods                             int32
	Valid                                   metav1.ConditionStatus
	Reason, Message                         string
}

func render(p *configv1alpha1.ColocationProfile) status {
	s := status{ObservedGeneration: p.Status.ObservedGeneration, MatchedPods: p.Status.MatchedPods}
	if c := meta.FindStatusCondition(p.Status.Conditions, configv1alpha1.ColocationProfileValid); c != nil {
		s.ConditionGeneration, s.Valid, s.Reason, s.Message = c.ObservedGeneration, c.Status, c.Reason, c.Message
	}
	return s
}

// valid is the status of a valid profile at generation gen with matched pods.
func valid(gen int64, matched int32) status {
	return status{ObservedGeneration: gen, ConditionGeneration: gen, MatchedPods: matched, Valid: metav1.ConditionTrue,
		Reason: configv1alpha1.ColocationProfileReasonValid, Message: "the webhook applies the profile to the new pods it selects"}
}

// expectStatus waits until the profile's status is want, and returns the profile.
func (f *fixture) expectStatus(name string, want status) *configv1alpha1.ColocationProfile {
	f.t.Helper()
	p := &configv1alpha1.ColocationProfile{}
	testenv.Eventually(f.t, "profile "+name+" has the wanted status", func() error {
		if err := f.e.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		if d := cmp.Diff(want, render(p)); d != "" {
			return fmt.Errorf("profile %s status (-want +got):\n%s", name, d)
		}
		return nil
	})
	return p
}

// TestMatchedPodsCountsTheProfilesLivePods: matchedPods counts the pods carrying the profile's label that have not
// finished, bound to a node (the pod cache) or waiting for one (the pending cache), and follows them as they are
// deleted, bound and finish; pods of another profile, without the label, or finished are not counted. `kubectl get`
// shows the count and the condition.
func TestMatchedPodsCountsTheProfilesLivePods(t *testing.T) {
	f := startController(t, colocationprofile.Config{MinWriteInterval: -1})
	ctx := context.Background()
	f.createProfile("etl", nil)
	f.createProfile("spark", nil)
	f.expectStatus("etl", valid(1, 0))

	bound := f.e.CreatePod(t, profilePod("etl-bound", "etl", "n1", corev1.PodRunning))
	waiting := f.e.CreatePod(t, profilePod("etl-waiting", "etl", "", corev1.PodPending))
	f.e.CreatePod(t, profilePod("etl-done", "etl", "n1", corev1.PodSucceeded))
	f.e.CreatePod(t, profilePod("etl-failed-waiting", "etl", "", corev1.PodFailed))
	f.e.CreatePod(t, profilePod("spark-1", "spark", "n1", corev1.PodRunning))
	f.e.CreatePod(t, profilePod("plain", "", "n1", corev1.PodRunning))
	f.expectStatus("etl", valid(1, 2))
	f.expectStatus("spark", valid(1, 1))

	out, err := f.e.Kubectl("get", "colocationprofile", "etl").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get colocationprofile etl: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !slicesHavePrefix(strings.Fields(lines[0]), "NAME", "MATCHED", "VALID") || !slicesHavePrefix(strings.Fields(lines[1]), "etl", "2", "True") {
		t.Errorf("kubectl get colocationprofile etl printed, want NAME MATCHED VALID ... / etl 2 True ...:\n%s", out)
	}

	if err := f.e.Client.Delete(ctx, bound, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	f.expectStatus("etl", valid(1, 1))

	// Bound: the pod leaves the pending cache and comes into the pod cache; then it finishes.
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: waiting.Namespace, Name: waiting.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n2"}}
	if err := f.e.Client.SubResource("binding").Create(ctx, waiting, binding); err != nil {
		t.Fatalf("binding pod %s: %v", waiting.Name, err)
	}
	testenv.Eventually(t, "the pod is bound", func() error {
		if err := f.e.Client.Get(ctx, client.ObjectKeyFromObject(waiting), waiting); err != nil {
			return err
		}
		if waiting.Spec.NodeName != "n2" {
			return fmt.Errorf("node %q", waiting.Spec.NodeName)
		}
		return nil
	})
	f.e.CreatePod(t, profilePod("etl-waiting-2", "etl", "", corev1.PodPending))
	f.expectStatus("etl", valid(1, 2))
	waiting.Status.Phase = corev1.PodSucceeded
	if err := f.e.Client.Status().Update(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	f.expectStatus("etl", valid(1, 1))
}

func slicesHavePrefix(s []string, prefix ...string) bool {
	return len(s) >= len(prefix) && cmp.Equal(s[:len(prefix)], prefix)
}

// TestInvalidProfileSaysWhy: a profile the webhook cannot apply has Valid False with the webhook's reason and
// message; a missing priority class created afterwards makes it valid (the PriorityClass watch).
func TestInvalidProfileSaysWhy(t *testing.T) {
	f := startController(t, colocationprofile.Config{MinWriteInterval: -1})
	tests := []struct {
		name        string
		edit        func(*configv1alpha1.ColocationProfileSpec)
		reason, msg string
	}{
		{"bad-selector", func(s *configv1alpha1.ColocationProfileSpec) {
			s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}
		}, configv1alpha1.ColocationProfileReasonInvalidSelector, "spec.selector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"},
		{"bad-namespace-selector", func(s *configv1alpha1.ColocationProfileSpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"x"}}}}
		}, configv1alpha1.ColocationProfileReasonInvalidSelector, `spec.namespaceSelector: "Near" is not a valid label selector operator`},
		{"prod-class", func(s *configv1alpha1.ColocationProfileSpec) { s.PriorityClassName = "gleaner-prod" },
			configv1alpha1.ColocationProfileReasonPriorityClassNotBatch, `priority class "gleaner-prod" has the value 9000, outside the batch band 5000-5999`},
		{"bad-label-value", func(s *configv1alpha1.ColocationProfileSpec) { s.Labels = map[string]string{"team": "data team"} },
			configv1alpha1.ColocationProfileReasonInvalidMetadata, `the profile's metadata is invalid: label "team" value "data team": a valid label must be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.createProfile(tt.name, tt.edit)
			p := &configv1alpha1.ColocationProfile{}
			testenv.Eventually(t, "profile "+tt.name+" is invalid", func() error {
				if err := f.e.Client.Get(context.Background(), client.ObjectKey{Name: tt.name}, p); err != nil {
					return err
				}
				got := render(p)
				if got.Valid != metav1.ConditionFalse || got.Reason != tt.reason || !strings.Contains(got.Message, tt.msg) || got.ObservedGeneration != 1 {
					return fmt.Errorf("status %+v, want Valid False, reason %s, a message with %q, generation 1", got, tt.reason, tt.msg)
				}
				return nil
			})
			if c := meta.FindStatusCondition(p.Status.Conditions, configv1alpha1.ColocationProfileValid); !c.LastTransitionTime.Time.Equal(epoch) {
				t.Errorf("lastTransitionTime %v, want the clock's %v", c.LastTransitionTime, epoch)
			}
		})
	}

	// A priority class that does not exist yet, then does.
	f.createProfile("later-class", func(s *configv1alpha1.ColocationProfileSpec) { s.PriorityClassName = "batch-later" })
	f.expectStatus("later-class", status{ObservedGeneration: 1, ConditionGeneration: 1, Valid: metav1.ConditionFalse,
		Reason: configv1alpha1.ColocationProfileReasonPriorityClassNotFound, Message: `priority class not found: "batch-later" does not exist`})
	f.clock.Step(time.Minute)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-later"}, Value: 5100}
	if err := f.e.Client.Create(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.e.Client.Delete(context.Background(), pc) })
	p := f.expectStatus("later-class", valid(1, 0))
	if c := meta.FindStatusCondition(p.Status.Conditions, configv1alpha1.ColocationProfileValid); !c.LastTransitionTime.Time.Equal(epoch.Add(time.Minute)) {
		t.Errorf("lastTransitionTime %v, want the clock's %v when the condition turned True", c.LastTransitionTime, epoch.Add(time.Minute))
	}
}

// TestObservedGenerationFollowsTheSpec: every spec change is observed, the condition with it; a spec made invalid
// and valid again shows each.
func TestObservedGenerationFollowsTheSpec(t *testing.T) {
	f := startController(t, colocationprofile.Config{MinWriteInterval: -1})
	f.createProfile("gen", nil)
	f.expectStatus("gen", valid(1, 0))

	gen := f.update("gen", func(s *configv1alpha1.ColocationProfileSpec) { s.Probability = ptr.To[int32](50) })
	f.expectStatus("gen", valid(gen, 0))
	gen = f.update("gen", func(s *configv1alpha1.ColocationProfileSpec) {
		s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}
	})
	f.expectStatus("gen", status{ObservedGeneration: gen, ConditionGeneration: gen, Valid: metav1.ConditionFalse,
		Reason:  configv1alpha1.ColocationProfileReasonInvalidSelector,
		Message: `spec.selector: values: Invalid value: ["x"]: values set must be empty for exists and does not exist`})
	gen = f.update("gen", func(s *configv1alpha1.ColocationProfileSpec) { s.Selector.MatchExpressions = nil })
	f.expectStatus("gen", valid(gen, 0))
}

// TestCountWritesAreSpaced: a new count is written at most once per MinWriteInterval of the controller's clock; a
// spec change is written at once even within it.
func TestCountWritesAreSpaced(t *testing.T) {
	const interval = 2 * time.Second
	f := startController(t, colocationprofile.Config{MinWriteInterval: interval})
	ctx := context.Background()
	f.createProfile("spaced", nil)
	f.expectStatus("spaced", valid(1, 0))

	// The clock stands still: the reconcile the pod brings, and the ones it requeues every interval of real time,
	// find the interval not passed.
	f.e.CreatePod(t, profilePod("spaced-1", "spaced", "n1", corev1.PodRunning))
	matched := func(want int32) error {
		p := &configv1alpha1.ColocationProfile{}
		if err := f.e.Client.Get(ctx, client.ObjectKey{Name: "spaced"}, p); err != nil {
			return err
		}
		if p.Status.MatchedPods != want {
			return fmt.Errorf("matchedPods %d, want %d", p.Status.MatchedPods, want)
		}
		return nil
	}
	testenv.Consistently(t, 2*interval, func() error { return matched(0) })
	gen := f.update("spaced", func(s *configv1alpha1.ColocationProfileSpec) { s.Probability = ptr.To[int32](80) })
	f.expectStatus("spaced", valid(gen, 1))

	// Once the clock has passed the interval, the requeued reconcile writes the count.
	f.e.CreatePod(t, profilePod("spaced-2", "spaced", "", corev1.PodPending))
	testenv.Eventually(t, "the new count is written once the interval has passed", func() error {
		f.clock.Step(interval)
		return matched(2)
	})
}
