package sloconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	root := path.String()
	res := validate.NewSchemaValidator(s, nil, root, strfmt.Default).Validate(obj)
	for _, e := range res.Errors {
		var ve *openapierrors.Validation
		if errors.As(e, &ve) {
			// ve.Name is the full path ("nodeStrategies[0].cpuSuppressThresholdPercent"), printed as is.
			msg := schemaMessage(ve)
			if c := ve.Code(); c == openapierrors.MaxFailCode || c == openapierrors.MinFailCode {
				// The validator names one end; a user fixing the value wants both.
				if b, ok := schemaIntBounds(schemaAt(s, strings.TrimPrefix(ve.Name, root))); ok {
					msg = "must be " + b.String()
				}
			}
			errs = append(errs, field.Invalid(field.NewPath(ve.Name), ve.Value, msg))
			continue
		}
		errs = append(errs, field.Invalid(path, nil, e.Error()))
	}
	return errs
}

// intBounds is the range of an integer field; a nil end is open.
type intBounds struct{ min, max *int64 }

// between is the range lo..hi.
func between(lo, hi int64) intBounds { return intBounds{min: &lo, max: &hi} }

// String says the range the way a message ends "must be ...": "from 1 to 3600", "at least 0".
func (b intBounds) String() string {
	switch {
	case b.min != nil && b.max != nil:
		return fmt.Sprintf("from %d to %d", *b.min, *b.max)
	case b.min != nil:
		return fmt.Sprintf("at least %d", *b.min)
	case b.max != nil:
		return fmt.Sprintf("at most %d", *b.max)
	}
	return "any integer"
}

func (b intBounds) contains(v int64) bool {
	return (b.min == nil || v >= *b.min) && (b.max == nil || v <= *b.max)
}

// schemaIntBoundsAt is the range of the integer field at path (see schemaAt) under the NodeSLO spec property prop.
func schemaIntBoundsAt(prop, path string) (intBounds, bool) {
	schemas, err := nodeSLOSpecSchemas()
	if err != nil || schemas[prop] == nil {
		return intBounds{}, false
	}
	return schemaIntBounds(schemaAt(schemas[prop], path))
}

// schemaIntBounds is the range of an integer schema; ok is false for a schema of another type (or nil).
func schemaIntBounds(s *spec.Schema) (b intBounds, ok bool) {
	if s == nil || !s.Type.Contains("integer") {
		return b, false
	}
	if s.Minimum != nil {
		lo := int64(math.Ceil(*s.Minimum))
		if s.ExclusiveMinimum && float64(lo) == *s.Minimum {
			lo++
		}
		b.min = &lo
	}
	if s.Maximum != nil {
		hi := int64(math.Floor(*s.Maximum))
		if s.ExclusiveMaximum && float64(hi) == *s.Maximum {
			hi--
		}
		b.max = &hi
	}
	return b, true
}

// schemaAt returns the schema at path under s, or nil. path is a field path below s as field.Path or encoding/json
// print it: ".lsClass.blkioQOS.blocks[0].ioCfg.readIOPS" or, without indexes, "lsClass.blkioQOS.blocks.ioCfg.readIOPS"
// (a property of an array's items is looked up in the items).
func schemaAt(s *spec.Schema, path string) *spec.Schema {
	items := func(s *spec.Schema) *spec.Schema {
		if s.Items == nil || s.Items.Schema == nil {
			return nil
		}
		return s.Items.Schema
	}
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		name, _, _ := strings.Cut(part, "[")
		if name != "" {
			for s != nil && s.Type.Contains("array") {
				s = items(s)
			}
			if s == nil {
				return nil
			}
			p, ok := s.Properties[name]
			if !ok {
				return nil
			}
			s = &p
		}
		for range strings.Count(part, "[") {
			if s = items(s); s == nil {
				return nil
			}
		}
	}
	return s
}

// schemaMessage is the validator's message without the field name and "in body", which field.Error adds itself.
func schemaMessage(e *openapierrors.Validation) string {
	msg := strings.TrimPrefix(e.Error(), e.Name)
	msg = strings.TrimPrefix(msg, " in body")
	return strings.TrimSpace(msg)
}

// toUnstructured turns a strategy into the JSON-like value a schema validator takes, integers as int64 as the API
// server's decoder makes them. Numbers are decoded as json.Number: through float64, an int64 near its maximum
// (9223372036854775807) would lose its last digits, fail to convert back, and be reported as "must be of type
// int64" instead of as out of range.
func toUnstructured(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding for validation: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding for validation: %w", err)
	}
	return normalizeNumbers(out), nil
}

// normalizeNumbers turns each json.Number into an int64 where it is one, else a float64.
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
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64() // encoding/json wrote it from a Go number
		return f
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

// colocationInts are the integer fields of a colocation strategy with their ranges, in the order they are
// reported. ColocationStrategy has no CRD, so its ranges live here; docs/configuration.md says why each is where it
// is.
func colocationInts(s *ColocationStrategy) []struct {
	name   string
	v      *int64
	bounds intBounds
} {
	return []struct {
		name   string
		v      *int64
		bounds intBounds
	}{
		{"metricAggregateDurationSeconds", s.MetricAggregateDurationSeconds, between(1, slov1alpha1.MaxMetricAggregateDurationSeconds)},
		{"metricReportIntervalSeconds", s.MetricReportIntervalSeconds, between(1, slov1alpha1.MaxMetricReportIntervalSeconds)},
		{"cpuReclaimThresholdPercent", s.CPUReclaimThresholdPercent, between(0, 100)},
		{"memoryReclaimThresholdPercent", s.MemoryReclaimThresholdPercent, between(0, 100)},
		{"degradeTimeMinutes", s.DegradeTimeMinutes, between(1, MaxDegradeTimeMinutes)},
		{"updateTimeThresholdSeconds", s.UpdateTimeThresholdSeconds, between(1, MaxUpdateTimeThresholdSeconds)},
		{"batchCPUThresholdPercent", s.BatchCPUThresholdPercent, between(0, 100)},
		{"batchMemoryThresholdPercent", s.BatchMemoryThresholdPercent, between(0, 100)},
		{"midCPUThresholdPercent", s.MidCPUThresholdPercent, between(0, 100)},
		{"midMemoryThresholdPercent", s.MidMemoryThresholdPercent, between(0, 100)},
		{"midUnallocatedPercent", s.MidUnallocatedPercent, between(0, 100)},
	}
}

// colocationIntBounds is the range of the colocation-config integer field at path ("degradeTimeMinutes",
// "nodeConfigs.degradeTimeMinutes"); ok is false for any other path.
func colocationIntBounds(path string) (intBounds, bool) {
	name := strings.TrimPrefix(path, "nodeConfigs.")
	for _, f := range colocationInts(&ColocationStrategy{}) {
		if f.name == name {
			return f.bounds, true
		}
	}
	return intBounds{}, false
}

// validateColocation checks the ranges of the colocation fields a strategy sets.
func validateColocation(s *ColocationStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
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
	for _, f := range colocationInts(s) {
		if f.v != nil && !f.bounds.contains(*f.v) {
			errs = append(errs, field.Invalid(path.Child(f.name), *f.v, "must be "+f.bounds.String()))
		}
	}
	if s.MetricAggregatePolicy != nil {
		durations := s.MetricAggregatePolicy.Durations
		p := path.Child("metricAggregatePolicy", "durations")
		if len(durations) > slov1alpha1.MaxAggregateDurations {
			errs = append(errs, field.TooMany(p, len(durations), slov1alpha1.MaxAggregateDurations))
		}
		for i, d := range durations {
			if d.Duration <= 0 || d.Duration > slov1alpha1.MaxAggregateDuration {
				errs = append(errs, field.Invalid(p.Index(i), d.Duration.String(), "must be longer than 0s and at most 1h"))
			}
		}
	}
	policy("cpuCalculatePolicy", s.CPUCalculatePolicy, CalculateByUsage, CalculateByMaxUsageRequest)
	policy("memoryCalculatePolicy", s.MemoryCalculatePolicy, CalculateByUsage, CalculateByRequest, CalculateByMaxUsageRequest)
	if d := s.ResourceDiffThreshold; d != nil && (*d < 0 || *d > 1) {
		errs = append(errs, field.Invalid(path.Child("resourceDiffThreshold"), *d, "must be a fraction, 0 to 1"))
	}
	return errs
}

// validateColocationConsistency checks a merged, defaulted colocation strategy: a node must report more often than
// its NodeMetric goes stale, or its batch and mid resources are removed between every two reports.
func validateColocationConsistency(s *ColocationStrategy, path *field.Path) field.ErrorList {
	report, degrade := *s.MetricReportIntervalSeconds, *s.DegradeTimeMinutes
	if report >= degrade*60 {
		return field.ErrorList{field.Invalid(path.Child("metricReportIntervalSeconds"), report, fmt.Sprintf(
			"must be shorter than degradeTimeMinutes (%d min = %d s): a NodeMetric reported less often goes stale between reports and the node loses its batch and mid resources",
			degrade, degrade*60))}
	}
	return nil
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
	errs = append(errs, validateAllocatablePair(path, "cpu", s.CPUAllocatableEvictThresholdPercent, s.CPUAllocatableEvictLowerPercent)...)
	errs = append(errs, validateAllocatablePair(path, "memory", s.MemoryAllocatableEvictThresholdPercent, s.MemoryAllocatableEvictLowerPercent)...)
	return errs
}

// validateAllocatablePair checks the allocatable eviction percents of one resource ("cpu", "memory"): both set or
// neither (they have no defaults; neither turns that resource's allocatable eviction off), the lower not above the
// threshold.
func validateAllocatablePair(path *field.Path, resource string, threshold, lower *int64) field.ErrorList {
	thresholdName, lowerName := resource+"AllocatableEvictThresholdPercent", resource+"AllocatableEvictLowerPercent"
	switch {
	case threshold != nil && lower == nil:
		return field.ErrorList{field.Required(path.Child(lowerName),
			"needed with "+thresholdName+": allocatable eviction stops when the requests are back at or below it")}
	case threshold == nil && lower != nil:
		return field.ErrorList{field.Required(path.Child(thresholdName),
			"needed with "+lowerName+": allocatable eviction starts when the requests are above it")}
	case threshold != nil && *lower > *threshold:
		return field.ErrorList{field.Invalid(path.Child(lowerName), *lower, fmt.Sprintf("must not exceed %s (%d)", thresholdName, *threshold))}
	}
	return nil
}

// validateQOSConsistency checks a merged, defaulted QoS strategy: each class's cache range must not be inverted,
// and its network QoS values must be bandwidths (the agent checks them against the node's total, which only it
// knows); lsrClass has no network QoS of its own (LSR pods share the LS class's).
func validateQOSConsistency(s *slov1alpha1.ResourceQOSStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		qos  *slov1alpha1.ResourceQOS
	}{{"lsrClass", s.LSRClass}, {"lsClass", s.LSClass}, {"beClass", s.BEClass}, {"systemClass", s.SystemClass}} {
		if c.qos != nil && c.qos.NetworkQOS != nil {
			errs = append(errs, validateNetworkQOS(c.name, c.qos.NetworkQOS, path.Child(c.name, "networkQOS"))...)
		}
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

// validateNetworkQOS checks one class's network QoS values.
func validateNetworkQOS(class string, n *slov1alpha1.NetworkQOSCfg, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "lsrClass" && n.Enable != nil && *n.Enable {
		errs = append(errs, field.Forbidden(path, "LSR pods share the LS class's bandwidth; set lsClass.networkQOS"))
	}
	for _, v := range []struct {
		name string
		val  *intstr.IntOrString
	}{
		{"ingressRequest", n.IngressRequest}, {"ingressLimit", n.IngressLimit},
		{"egressRequest", n.EgressRequest}, {"egressLimit", n.EgressLimit},
	} {
		if _, err := slov1alpha1.Bandwidth(v.val, 100, 0); err != nil {
			errs = append(errs, field.Invalid(path.Child(v.name), v.val.String(), err.Error()))
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
