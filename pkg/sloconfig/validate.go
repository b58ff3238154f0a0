package sloconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/config/crd"
)

// Ranges and enums of the NodeSLO strategies are checked against the NodeSLO CRD's own OpenAPI schema (the one the
// API server enforces, embedded by config/crd), so a key the manager accepts always makes a NodeSLO the API server
// accepts, and the two can never drift apart. What a schema cannot say (lower <= upper, unique names, selectors,
// the colocation fields, which have no CRD) is checked here in Go.

// nodeSLOSpecSchemas are the schemas of the NodeSLO spec's properties, by property name. It is built once from the
// embedded CRD and never changes afterwards.
var nodeSLOSpecSchemas = sync.OnceValues(func() (map[string]*spec.Schema, error) {
	crds, err := crd.Objects()
	if err != nil {
		return nil, err
	}
	for _, c := range crds {
		if c.Spec.Group != slov1alpha1.GroupVersion.Group || c.Spec.Names.Kind != "NodeSLO" {
			continue
		}
		for _, v := range c.Spec.Versions {
			if v.Name != slov1alpha1.GroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			out := map[string]*spec.Schema{}
			for name, props := range v.Schema.OpenAPIV3Schema.Properties["spec"].Properties {
				b, err := json.Marshal(props)
				if err != nil {
					return nil, fmt.Errorf("encoding the schema of NodeSLO spec.%s: %w", name, err)
				}
				s := &spec.Schema{}
				if err := json.Unmarshal(b, s); err != nil {
					return nil, fmt.Errorf("decoding the schema of NodeSLO spec.%s: %w", name, err)
				}
				out[name] = s
			}
			return out, nil
		}
	}
	return nil, errors.New("the embedded CRDs have no NodeSLO " + slov1alpha1.GroupVersion.Version)
})

// validateSchema checks v against the schema of the NodeSLO spec property prop and reports what fails under path.
func validateSchema(prop string, v any, path *field.Path) field.ErrorList {
	schemas, err := nodeSLOSpecSchemas()
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	s, ok := schemas[prop]
	if !ok {
		return field.ErrorList{field.InternalError(path, fmt.Errorf("the NodeSLO CRD has no spec.%s", prop))}
	}
	obj, err := toUnstructured(v)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var errs field.ErrorList
	res := validate.NewSchemaValidator(s, nil, path.String(), strfmt.Default).Validate(obj)
	for _, e := range res.Errors {
		var ve *openapierrors.Validation
		if errors.As(e, &ve) {
			// ve.Name is the full path ("nodeStrategies[0].cpuSuppressThresholdPercent"), printed as is.
			errs = append(errs, field.Invalid(field.NewPath(ve.Name), ve.Value, schemaMessage(ve)))
			continue
		}
		errs = append(errs, field.Invalid(path, nil, e.Error()))
	}
	return errs
}

// schemaMessage is the validator's message without the field name and "in body", which field.Error adds itself.
func schemaMessage(e *openapierrors.Validation) string {
	msg := strings.TrimPrefix(e.Error(), e.Name)
	msg = strings.TrimPrefix(msg, " in body")
	return strings.TrimSpace(msg)
}

// toUnstructured turns a strategy into the JSON-like value a schema validator takes (integers as int64).
func toUnstructured(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding for validation: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding for validation: %w", err)
	}
	return normalizeNumbers(out), nil
}

// normalizeNumbers turns the float64 numbers encoding/json produces into int64 where they are whole, as the API
// server's decoder does, so "integer" schemas match.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

// validateProfile checks a node override's name and selector. names collects the names seen so far in the key.
func validateProfile(p NodeCfgProfile, path *field.Path, names map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.Name == "":
		errs = append(errs, field.Required(path.Child("name"), "every node override needs a name"))
	case names[p.Name]:
		errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
	}
	names[p.Name] = true
	if p.NodeSelector == nil {
		return append(errs, field.Required(path.Child("nodeSelector"), "an override without a selector matches no node; use {} to match every node"))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(p.NodeSelector,
		metav1validation.LabelSelectorValidationOptions{}, path.Child("nodeSelector"))...)
	if len(errs) == 0 {
		if _, err := metav1.LabelSelectorAsSelector(p.NodeSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("nodeSelector"), p.NodeSelector, err.Error()))
		}
	}
	return errs
}

// validateColocation checks the ranges of the colocation fields a strategy sets.
func validateColocation(s *ColocationStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	atLeast := func(name string, v *int64, lo int64) {
		if v != nil && *v < lo {
			errs = append(errs, field.Invalid(path.Child(name), *v, fmt.Sprintf("must be at least %d", lo)))
		}
	}
	percent := func(name string, v *int64) {
		if v != nil && (*v < 0 || *v > 100) {
			errs = append(errs, field.Invalid(path.Child(name), *v, "must be a percentage, 0 to 100"))
		}
	}
	policy := func(name string, v *CalculatePolicy, allowed ...CalculatePolicy) {
		if v == nil {
			return
		}
		for _, a := range allowed {
			if *v == a {
				return
			}
		}
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		errs = append(errs, field.NotSupported(path.Child(name), *v, names))
	}
	atLeast("metricAggregateDurationSeconds", s.MetricAggregateDurationSeconds, 1)
	atLeast("metricReportIntervalSeconds", s.MetricReportIntervalSeconds, 1)
	atLeast("degradeTimeMinutes", s.DegradeTimeMinutes, 1)
	atLeast("updateTimeThresholdSeconds", s.UpdateTimeThresholdSeconds, 1)
	if s.MetricAggregatePolicy != nil {
		for i, d := range s.MetricAggregatePolicy.Durations {
			if d.Duration <= 0 {
				errs = append(errs, field.Invalid(path.Child("metricAggregatePolicy", "durations").Index(i), d.Duration.String(), "must be positive"))
			}
		}
	}
	percent("cpuReclaimThresholdPercent", s.CPUReclaimThresholdPercent)
	percent("memoryReclaimThresholdPercent", s.MemoryReclaimThresholdPercent)
	percent("batchCPUThresholdPercent", s.BatchCPUThresholdPercent)
	percent("batchMemoryThresholdPercent", s.BatchMemoryThresholdPercent)
	percent("midCPUThresholdPercent", s.MidCPUThresholdPercent)
	percent("midMemoryThresholdPercent", s.MidMemoryThresholdPercent)
	percent("midUnallocatedPercent", s.MidUnallocatedPercent)
	policy("cpuCalculatePolicy", s.CPUCalculatePolicy, CalculateByUsage, CalculateByMaxUsageRequest)
	policy("memoryCalculatePolicy", s.MemoryCalculatePolicy, CalculateByUsage, CalculateByRequest, CalculateByMaxUsageRequest)
	if d := s.ResourceDiffThreshold; d != nil && (*d < 0 || *d > 1) {
		errs = append(errs, field.Invalid(path.Child("resourceDiffThreshold"), *d, "must be a fraction, 0 to 1"))
	}
	return errs
}

// validateThresholdConsistency checks a merged, defaulted threshold strategy for bounds that contradict each other.
func validateThresholdConsistency(s *slov1alpha1.ResourceThresholdStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lo, hi := s.MemoryEvictLowerPercent, s.MemoryEvictThresholdPercent; lo != nil && hi != nil && *lo > *hi {
		errs = append(errs, field.Invalid(path.Child("memoryEvictLowerPercent"), *lo,
			fmt.Sprintf("must not exceed memoryEvictThresholdPercent (%d)", *hi)))
	}
	lo, hi := s.CPUEvictBESatisfactionLowerPercent, s.CPUEvictBESatisfactionUpperPercent
	switch {
	case lo != nil && hi == nil:
		errs = append(errs, field.Required(path.Child("cpuEvictBESatisfactionUpperPercent"),
			"needed with cpuEvictBESatisfactionLowerPercent: CPU eviction stops when satisfaction is back above it"))
	case lo == nil && hi != nil:
		errs = append(errs, field.Required(path.Child("cpuEvictBESatisfactionLowerPercent"),
			"needed with cpuEvictBESatisfactionUpperPercent: CPU eviction starts when satisfaction falls below it"))
	case lo != nil && *lo > *hi:
		errs = append(errs, field.Invalid(path.Child("cpuEvictBESatisfactionLowerPercent"), *lo,
			fmt.Sprintf("must not exceed cpuEvictBESatisfactionUpperPercent (%d)", *hi)))
	}
	return errs
}

// validateQOSConsistency checks a merged, defaulted QoS strategy: each class's cache range must not be inverted.
func validateQOSConsistency(s *slov1alpha1.ResourceQOSStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		qos  *slov1alpha1.ResourceQOS
	}{{"lsrClass", s.LSRClass}, {"lsClass", s.LSClass}, {"beClass", s.BEClass}, {"systemClass", s.SystemClass}} {
		if c.qos == nil || c.qos.ResctrlQOS == nil {
			continue
		}
		r := c.qos.ResctrlQOS
		if r.CATRangeStartPercent != nil && r.CATRangeEndPercent != nil && *r.CATRangeStartPercent > *r.CATRangeEndPercent {
			errs = append(errs, field.Invalid(path.Child(c.name, "resctrlQOS", "catRangeStartPercent"), *r.CATRangeStartPercent,
				fmt.Sprintf("must not exceed catRangeEndPercent (%d)", *r.CATRangeEndPercent)))
		}
	}
	return errs
}

// validateHostApplications checks that names are unique within one list.
func validateHostApplications(apps []slov1alpha1.HostApplicationSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, a := range apps {
		if a.Name != "" && seen[a.Name] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), a.Name))
		}
		seen[a.Name] = true
	}
	return errs
}
