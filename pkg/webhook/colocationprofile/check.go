package colocationprofile

import (
	"errors"
	"fmt"
	"strings"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
)

// ProfileError says why the webhook cannot apply a profile to any pod it selects: what the profile's Valid
// condition shows (configv1alpha1.ColocationProfileValid, False). Pods a valid profile cannot translate on their own
// account (pod-level resources, say) get plain errors instead.
type ProfileError struct {
	// Reason is the condition's reason, one of configv1alpha1.ColocationProfileReason....
	Reason string
	// Err says what is wrong; the error's message is its message.
	Err error
}

func (e *ProfileError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ProfileError) Unwrap() error { return e.Err }

// Check reports whether the webhook can apply profile to the pods it selects, pc being the PriorityClass the
// profile names (nil: it does not exist). It returns nil when it can, else a *ProfileError: a selector that does
// not parse (the profile then selects nothing), a priority class that is missing or outside the batch band, or
// labels, annotations or a name the API server would refuse on a pod (every pod the profile selects is then admitted
// unchanged). These are the checks the webhook itself makes (selecting, Translate), so the status says what
// admission does.
func Check(profile *configv1alpha1.ColocationProfile, pc *schedulingv1.PriorityClass) error {
	for _, s := range []struct {
		field string
		sel   func() error
	}{
		{"selector", func() error { _, err := selector(profile.Spec.Selector); return err }},
		{"namespaceSelector", func() error { _, err := selector(profile.Spec.NamespaceSelector); return err }},
	} {
		if err := s.sel(); err != nil {
			return &ProfileError{Reason: configv1alpha1.ColocationProfileReasonInvalidSelector, Err: fmt.Errorf("spec.%s: %w", s.field, err)}
		}
	}
	if err := checkPriorityClass(priorityClassName(profile.Spec), pc); err != nil {
		return err
	}
	return checkMetadata(profile)
}

// checkPriorityClass refuses a priority class that does not exist (pc nil) or lies outside the batch band.
func checkPriorityClass(name string, pc *schedulingv1.PriorityClass) error {
	if pc == nil {
		return &ProfileError{Reason: configv1alpha1.ColocationProfileReasonPriorityClassNotFound, Err: fmt.Errorf("%w: %q does not exist", errNoPriorityClass, name)}
	}
	if pc.Value < batchPriorityMin || pc.Value > batchPriorityMax {
		return &ProfileError{Reason: configv1alpha1.ColocationProfileReasonPriorityClassNotBatch,
			Err: fmt.Errorf("priority class %q has the value %d, outside the batch band %d-%d", pc.Name, pc.Value, batchPriorityMin, batchPriorityMax)}
	}
	return nil
}

// checkMetadata refuses labels and annotations the API server would refuse: the pod would not be created at all. The
// profile's name as the value of configv1alpha1.LabelColocationProfile is not among them: Translate leaves the label
// out where the name cannot be a label value (a profile created before the CRD bounded names).
func checkMetadata(profile *configv1alpha1.ColocationProfile) error {
	var errs []string
	for k, v := range profile.Spec.Labels {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Sprintf("label key %q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Sprintf("label %q value %q: %s", k, v, msg))
		}
	}
	for k := range profile.Spec.Annotations {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, fmt.Sprintf("annotation key %q: %s", k, msg))
		}
	}
	if len(errs) > 0 {
		return &ProfileError{Reason: configv1alpha1.ColocationProfileReasonInvalidMetadata,
			Err: errors.New("the profile's metadata is invalid: " + strings.Join(errs, "; "))}
	}
	return nil
}
