package colocationprofile

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
)

// TestCheckSaysWhyAProfileCannotApply: Check passes a profile the webhook can apply, and names the reason and the
// field of each one it cannot; Translate refuses the same profiles with the same errors.
func TestCheckSaysWhyAProfileCannotApply(t *testing.T) {
	batch := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-batch"}, Value: 5000}
	prod := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-prod"}, Value: 9000}
	sel := func(op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: op, Values: values}}}
	}
	tests := []struct {
		name       string
		profile    string
		spec       configv1alpha1.ColocationProfileSpec
		pc         *schedulingv1.PriorityClass
		wantReason string // "": valid
		wantMsg    string
	}{
		{name: "valid", spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpIn, "etl")}, pc: batch},
		{name: "selector", spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpIn)}, pc: batch,
			wantReason: configv1alpha1.ColocationProfileReasonInvalidSelector, wantMsg: "spec.selector: values: Invalid value"},
		{name: "namespace selector", spec: configv1alpha1.ColocationProfileSpec{NamespaceSelector: sel("Near", "x")}, pc: batch,
			wantReason: configv1alpha1.ColocationProfileReasonInvalidSelector, wantMsg: `spec.namespaceSelector: "Near" is not a valid label selector operator`},
		{name: "no priority class", spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpExists)},
			wantReason: configv1alpha1.ColocationProfileReasonPriorityClassNotFound, wantMsg: `priority class not found: "gleaner-batch" does not exist`},
		{name: "prod priority class", spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpExists), PriorityClassName: "gleaner-prod"}, pc: prod,
			wantReason: configv1alpha1.ColocationProfileReasonPriorityClassNotBatch, wantMsg: `priority class "gleaner-prod" has the value 9000, outside the batch band 5000-5999`},
		{name: "annotation key", spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpExists), Annotations: map[string]string{"a b": "x"}}, pc: batch,
			wantReason: configv1alpha1.ColocationProfileReasonInvalidMetadata, wantMsg: `the profile's metadata is invalid: annotation key "a b"`},
		// Created before the CRD bounded names: it still applies, its pods unmarked (TestTranslateOfALongNamedProfile).
		{name: "name too long for a label", profile: strings.Repeat("p", 64), spec: configv1alpha1.ColocationProfileSpec{Selector: sel(metav1.LabelSelectorOpExists)}, pc: batch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.profile
			if name == "" {
				name = "etl"
			}
			p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tt.spec}
			err := Check(p, tt.pc)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var pe *ProfileError
			if !errors.As(err, &pe) || pe.Reason != tt.wantReason || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Check = %v (%#v), want a *ProfileError with reason %s and a message with %q", err, pe, tt.wantReason, tt.wantMsg)
			}
			if tt.wantReason == configv1alpha1.ColocationProfileReasonInvalidSelector {
				return // selecting, not Translate, skips such a profile
			}
			if terr := Translate(etlTestPod(), p, tt.pc); terr == nil || terr.Error() != err.Error() {
				t.Errorf("Translate = %v, want Check's error %v", terr, err)
			}
		})
	}
}

// etlTestPod is a pod Translate can make a batch pod.
func etlTestPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etl-1", Labels: map[string]string{"app": "etl"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
	}}}
}

// TestTranslateMarksThePod: a translated pod carries the profile's name in configv1alpha1.LabelColocationProfile,
// in place of a value it was created with, and whatever the profile's own labels say.
func TestTranslateMarksThePod(t *testing.T) {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-batch"}, Value: 5000}
	for _, tt := range []struct {
		name          string
		own, profiles map[string]string
	}{
		{name: "unlabelled pod"},
		{name: "pod with another profile's mark", own: map[string]string{configv1alpha1.LabelColocationProfile: "other"}},
		{name: "profile repeating the mark", profiles: map[string]string{configv1alpha1.LabelColocationProfile: "etl"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := etlTestPod()
			for k, v := range tt.own {
				pod.Labels[k] = v
			}
			p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "etl"}, Spec: configv1alpha1.ColocationProfileSpec{Labels: tt.profiles}}
			if err := Translate(pod, p, pc); err != nil {
				t.Fatal(err)
			}
			if got := pod.Labels[configv1alpha1.LabelColocationProfile]; got != "etl" {
				t.Errorf("label %s = %q, want the profile's name etl", configv1alpha1.LabelColocationProfile, got)
			}
		})
	}
}
