package sloconfig

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// KeySource says where the value in force for a key comes from.
type KeySource string

const (
	// SourceConfigMap means the key's current value in the ConfigMap is in force.
	SourceConfigMap KeySource = "ConfigMap"
	// SourceLastGood means the ConfigMap's current value was rejected and an earlier value of the key is in force.
	SourceLastGood KeySource = "LastGood"
	// SourceDefault means the defaults are in force: the key is absent (or the ConfigMap is), or it was rejected
	// before any value of it was ever accepted.
	SourceDefault KeySource = "Default"
)

// KeyStatus is the state of one key in a Snapshot.
type KeyStatus struct {
	// Key is the ConfigMap key.
	Key string
	// Source says where the value in force comes from.
	Source KeySource
	// Err is a *KeyError saying why the ConfigMap's current value was rejected; nil when it is in force or the key
	// is absent.
	Err error
	// Findings are the notes about the value in force (unknown fields, names matched ignoring case, repeats).
	Findings []Finding

	applied  string // the text in force (Source ConfigMap or LastGood)
	rejected string // the text rejected (Err != nil)
}

// AppliedText is the ConfigMap text of the value in force: the key's current text for SourceConfigMap, the text of
// its last good value for SourceLastGood, and "" for SourceDefault. It is what gleaner-manager saves, so that a
// restarted manager can Restore it.
func (k KeyStatus) AppliedText() string {
	if k.Source == SourceDefault {
		return ""
	}
	return k.applied
}

// Snapshot is one version of the parsed slo-controller-config: for every key, the value in force and how it got
// there. A published Snapshot never changes; its methods return copies that the caller owns and may modify. Read
// Store.Current once per reconcile and use that one value throughout, so a reconcile never mixes two versions.
type Snapshot struct {
	version uint64
	values  map[string]any // key -> *compiled[S], every key present
	keys    map[string]KeyStatus
	// unknownKeys are the ConfigMap's keys Gleaner does not read, sorted.
	unknownKeys []string
}

// Version numbers the snapshots of one Store: 1 for the first load, +1 for every change of a key's value or status.
// It restarts with the process, so it is never written into objects.
func (s *Snapshot) Version() uint64 { return s.version }

// Key returns the status of a key of Keys(); the zero KeyStatus for any other name.
func (s *Snapshot) Key(key string) KeyStatus { return s.keys[key] }

// KeyStatuses returns the status of every key, in the order of Keys().
func (s *Snapshot) KeyStatuses() []KeyStatus {
	out := make([]KeyStatus, 0, len(s.keys))
	for _, k := range Keys() {
		out = append(out, s.keys[k])
	}
	return out
}

func value[S any](s *Snapshot, key string) *compiled[S] {
	return s.values[key].(*compiled[S])
}

// Colocation returns the colocation strategy of a node with these labels: defaults, overlaid by the cluster
// strategy, overlaid by the first matching nodeConfigs entry. Every field is set.
func (s *Snapshot) Colocation(nodeLabels map[string]string) *ColocationStrategy {
	_, eff := value[ColocationStrategy](s, ColocationConfigKey).pick(labels.Set(nodeLabels))
	return eff.DeepCopy()
}

// Override returns the name of the node override of key (nodeConfigs or nodeStrategies) that a node with these
// labels gets, or "" when none matches and the cluster strategy applies (or key is unknown). It is for explaining a
// node's strategy: "colocation-config: nodeConfigs gpu-pool".
func (s *Snapshot) Override(key string, nodeLabels map[string]string) string {
	c, ok := s.values[key].(interface{ overrideName(labels.Labels) string })
	if !ok {
		return ""
	}
	return c.overrideName(labels.Set(nodeLabels))
}

// NodeSLOSpec returns the spec of the NodeSLO of a node with these labels: for each key, the cluster strategy
// overlaid by the first matching node strategy, without the defaults (a NodeSLO shows only what the ConfigMap
// sets; slov1alpha1.NodeSLOSpec.WithDefaults fills in the rest). Every strategy pointer is set, to an empty strategy when nothing is
// configured, and Extensions is {}.
func (s *Snapshot) NodeSLOSpec(nodeLabels map[string]string) *slov1alpha1.NodeSLOSpec {
	l := labels.Set(nodeLabels)
	threshold, _ := value[slov1alpha1.ResourceThresholdStrategy](s, ResourceThresholdConfigKey).pick(l)
	qos, _ := value[slov1alpha1.ResourceQOSStrategy](s, ResourceQOSConfigKey).pick(l)
	burst, _ := value[slov1alpha1.CPUBurstStrategy](s, CPUBurstConfigKey).pick(l)
	system, _ := value[slov1alpha1.SystemStrategy](s, SystemConfigKey).pick(l)
	apps, _ := value[hostApplications](s, HostApplicationConfigKey).pick(l)
	spec := &slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: threshold.DeepCopy(),
		ResourceQOSStrategy:         qos.DeepCopy(),
		CPUBurstStrategy:            burst.DeepCopy(),
		SystemStrategy:              system.DeepCopy(),
		Extensions:                  &runtime.RawExtension{Raw: []byte("{}")},
	}
	for _, a := range apps.Applications {
		spec.HostApplications = append(spec.HostApplications, *a.DeepCopy())
	}
	return spec
}

// NodeMetricSpec returns the spec of the NodeMetric of a node with these labels: the collect policy of its
// colocation strategy, every field set.
func (s *Snapshot) NodeMetricSpec(nodeLabels map[string]string) *slov1alpha1.NodeMetricSpec {
	c := s.Colocation(nodeLabels)
	return &slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
		AggregateDurationSeconds: c.MetricAggregateDurationSeconds,
		ReportIntervalSeconds:    c.MetricReportIntervalSeconds,
		NodeAggregatePolicy:      c.MetricAggregatePolicy,
	}}
}

// The NodeChangedFunc of each consumer. Each compares only what its consumer derives, so a change to one key
// enqueues only the nodes whose derived object changes.

// ColocationChanged reports whether a node's colocation strategy differs between two snapshots; old nil (the first
// load) counts as a change. The noderesource controller reconciles the nodes for which it is true.
func ColocationChanged(old, new *Snapshot, nodeLabels map[string]string) bool {
	return keysChanged(old, new, nodeLabels, ColocationConfigKey)
}

// NodeResourceChanged reports whether anything the noderesource controller derives for a node differs between two
// snapshots: its colocation strategy (the reclaimed resources), its CPU normalization strategy or its resource
// amplification strategy (the ratio annotations); old nil counts as a change.
func NodeResourceChanged(old, new *Snapshot, nodeLabels map[string]string) bool {
	return keysChanged(old, new, nodeLabels, ColocationConfigKey, CPUNormalizationConfigKey, ResourceAmplificationConfigKey)
}

// NodeSLOChanged reports whether the NodeSLO spec of a node differs between two snapshots; old nil counts as a
// change.
func NodeSLOChanged(old, new *Snapshot, nodeLabels map[string]string) bool {
	return keysChanged(old, new, nodeLabels, ResourceThresholdConfigKey, ResourceQOSConfigKey, CPUBurstConfigKey,
		SystemConfigKey, HostApplicationConfigKey)
}

// NodeMetricChanged reports whether the NodeMetric spec of a node differs between two snapshots; old nil counts as
// a change.
func NodeMetricChanged(old, new *Snapshot, nodeLabels map[string]string) bool {
	if old == nil || new == nil {
		return true
	}
	if old.values[ColocationConfigKey] == new.values[ColocationConfigKey] {
		return false
	}
	return !equality.Semantic.DeepEqual(old.NodeMetricSpec(nodeLabels), new.NodeMetricSpec(nodeLabels))
}

// keysChanged compares what a node gets from each key. A key whose compiled value is the same in both snapshots
// (unchanged text, or a rejected edit) is skipped without matching any selector.
func keysChanged(old, new *Snapshot, nodeLabels map[string]string, keys ...string) bool {
	if old == nil || new == nil {
		return true
	}
	l := labels.Set(nodeLabels)
	for _, k := range keys {
		ov, nv := old.values[k], new.values[k]
		if ov == nv {
			continue
		}
		var differ bool
		switch k {
		case ColocationConfigKey:
			differ = pickDiffers[ColocationStrategy](ov, nv, l, true)
		case ResourceThresholdConfigKey:
			differ = pickDiffers[slov1alpha1.ResourceThresholdStrategy](ov, nv, l, false)
		case ResourceQOSConfigKey:
			differ = pickDiffers[slov1alpha1.ResourceQOSStrategy](ov, nv, l, false)
		case CPUBurstConfigKey:
			differ = pickDiffers[slov1alpha1.CPUBurstStrategy](ov, nv, l, false)
		case SystemConfigKey:
			differ = pickDiffers[slov1alpha1.SystemStrategy](ov, nv, l, false)
		case HostApplicationConfigKey:
			differ = pickDiffers[hostApplications](ov, nv, l, false)
		case CPUNormalizationConfigKey:
			differ = pickDiffers[CPUNormalizationStrategy](ov, nv, l, true)
		case ResourceAmplificationConfigKey:
			differ = pickDiffers[ResourceAmplificationStrategy](ov, nv, l, true)
		}
		if differ {
			return true
		}
	}
	return false
}

// pickDiffers compares the strategies a node picks from two compiled values of one key: the effective ones when
// effective is set, else the sparse ones (what a NodeSLO shows).
func pickDiffers[S any](old, new any, l labels.Labels, effective bool) bool {
	os, oe := old.(*compiled[S]).pickJSON(l)
	ns, ne := new.(*compiled[S]).pickJSON(l)
	if effective {
		return oe != ne
	}
	return os != ns
}

// sameKeyStatus reports whether two statuses say the same thing, so applying an unchanged ConfigMap publishes no
// new version.
func sameKeyStatus(a, b KeyStatus) bool {
	return a.Source == b.Source && a.applied == b.applied && a.rejected == b.rejected &&
		errString(a.Err) == errString(b.Err) && a.Key == b.Key
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
