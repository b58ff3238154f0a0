package sloconfig

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func cm(data map[string]string) *corev1.ConfigMap { return &corev1.ConfigMap{Data: data} }

type noticeSummary struct {
	Key     string
	Warning bool
	Reason  string
	Message string
}

func summarize(ns []Notice) []noticeSummary {
	out := make([]noticeSummary, len(ns))
	for i, n := range ns {
		out[i] = noticeSummary(n)
	}
	return out
}

// TestStoreKeepsLastGoodValues walks one ConfigMap through a life: applied, edited badly, fixed, keys removed,
// deleted. After every step it checks the value in force, the key statuses, the version and the notices.
func TestStoreKeepsLastGoodValues(t *testing.T) {
	s := NewStore()
	if s.Current() != nil {
		t.Fatal("a new store has a snapshot before the first Apply")
	}
	good := map[string]string{
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 55}}`,
		SystemConfigKey:            `{"clusterStrategy": {"minFreeKbytesFactor": 200}}`,
	}
	r := s.Apply(cm(good))
	if !r.Changed || r.Current.Version() != 1 || r.Previous != nil {
		t.Fatalf("first apply: %+v", r)
	}
	if got := *r.Current.NodeSLOSpec(nil).ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent; got != 55 {
		t.Fatalf("cpuSuppressThresholdPercent %d, want 55", got)
	}
	expectDiff(t, "notices", []noticeSummary{{Reason: ReasonApplied, Message: "version 1 in force; changed: colocation-config (Default), " +
		"resource-threshold-config (ConfigMap), resource-qos-config (Default), cpu-burst-config (Default), system-config (ConfigMap), " +
		"host-application-config (Default), cpu-normalization-config (Default), resource-amplification-config (Default)"}}, summarize(r.Notices()))

	if r := s.Apply(cm(good)); r.Changed || r.Current.Version() != 1 || len(r.Notices()) != 0 {
		t.Fatalf("the same ConfigMap again must publish nothing: %+v", r)
	}

	// A bad edit of one key, a good edit of another.
	bad := map[string]string{
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 155}}`,
		SystemConfigKey:            `{"clusterStrategy": {"minFreeKbytesFactor": 300}}`,
	}
	r = s.Apply(cm(bad))
	if !r.Changed || r.Current.Version() != 2 {
		t.Fatalf("bad edit: %+v", r)
	}
	spec := r.Current.NodeSLOSpec(nil)
	if got := *spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent; got != 55 {
		t.Errorf("the rejected key must keep its last good value 55, got %d", got)
	}
	if got := *spec.SystemStrategy.MinFreeKbytesFactor; got != 300 {
		t.Errorf("the other key still applies: minFreeKbytesFactor %d, want 300", got)
	}
	st := r.Current.Key(ResourceThresholdConfigKey)
	wantErr := "resource-threshold-config: clusterStrategy.cpuSuppressThresholdPercent: Invalid value: 155: must be from 0 to 100"
	if st.Source != SourceLastGood || st.Err == nil || st.Err.Error() != wantErr {
		t.Errorf("status %+v, want LastGood with %q", st, wantErr)
	}
	expectDiff(t, "notices", []noticeSummary{
		{Key: ResourceThresholdConfigKey, Warning: true, Reason: ReasonInvalid, Message: wantErr + "; keeping the last good value"},
		{Reason: ReasonApplied, Message: "version 2 in force; changed: system-config (ConfigMap)"},
	}, summarize(r.Notices()))
	// The same bad text again: nothing new to say.
	if r := s.Apply(cm(bad)); r.Changed {
		t.Errorf("re-applying the same bad ConfigMap published version %d", r.Current.Version())
	}

	// Fixed.
	fixed := map[string]string{
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 45}}`,
		SystemConfigKey:            bad[SystemConfigKey],
	}
	r = s.Apply(cm(fixed))
	if got := *r.Current.NodeSLOSpec(nil).ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent; got != 45 {
		t.Errorf("fixed value %d, want 45", got)
	}
	if st := r.Current.Key(ResourceThresholdConfigKey); st.Source != SourceConfigMap || st.Err != nil {
		t.Errorf("fixed key status %+v", st)
	}
	expectDiff(t, "notices", []noticeSummary{
		{Key: ResourceThresholdConfigKey, Reason: ReasonRecovered, Message: "resource-threshold-config: valid again; its error is cleared"},
		{Reason: ReasonApplied, Message: "version 3 in force; changed: resource-threshold-config (ConfigMap)"},
	}, summarize(r.Notices()))
}

// TestStoreRemovedKeysAndDeletion: a key removed returns to its defaults, unknown keys are reported, and deleting the
// ConfigMap returns every key to its defaults.
func TestStoreRemovedKeysAndDeletion(t *testing.T) {
	s := NewStore()
	s.Apply(cm(map[string]string{
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true}}`,
		SystemConfigKey:            `{"clusterStrategy": {"minFreeKbytesFactor": 300}}`,
	}))
	r := s.Apply(cm(map[string]string{SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 300}}`, "colocation-cfg": "{}"}))
	if got := r.Current.NodeSLOSpec(nil).ResourceUsedThresholdWithBE; got.Enable != nil {
		t.Errorf("a removed key must return to the defaults, got %+v", got)
	}
	expectDiff(t, "notices", []noticeSummary{
		{Warning: true, Reason: ReasonFieldWarnings, Message: "unknown keys ignored: colocation-cfg (known keys: " + strings.Join(Keys(), ", ") + ")"},
		{Reason: ReasonApplied, Message: "version 2 in force; changed: resource-threshold-config (Default)"},
	}, summarize(r.Notices()))

	// Deleting the ConfigMap returns every key to its defaults.
	r = s.Apply(nil)
	for _, k := range r.Current.KeyStatuses() {
		if k.Source != SourceDefault || k.Err != nil {
			t.Errorf("after deletion %s is %+v, want the defaults", k.Key, k)
		}
	}
	if got := r.Current.NodeSLOSpec(nil).SystemStrategy.MinFreeKbytesFactor; got != nil {
		t.Errorf("after deletion minFreeKbytesFactor is %d, want unset", *got)
	}
}

func TestStoreRejectedBeforeAnyGoodValue(t *testing.T) {
	s := NewStore()
	r := s.Apply(cm(map[string]string{CPUBurstConfigKey: `{"clusterStrategy": {"policy": "auto",}}`}))
	st := r.Current.Key(CPUBurstConfigKey)
	if st.Source != SourceDefault || st.Err == nil {
		t.Fatalf("status %+v, want the defaults with an error", st)
	}
	if got := r.Current.NodeSLOSpec(nil).CPUBurstStrategy.Policy; got != "" {
		t.Errorf("policy %q, want unset", got)
	}
	n := r.Notices()
	if len(n) == 0 || !n[0].Warning || !strings.HasSuffix(n[0].Message, "; using the defaults until it is fixed") ||
		!strings.HasPrefix(n[0].Message, "cpu-burst-config: malformed JSON at line 1, column 39") {
		t.Errorf("notices %+v", n)
	}
	// Reverting to an earlier text that is still in force after a rejected edit.
	s = NewStore()
	good := map[string]string{SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 200}}`}
	v1 := s.Apply(cm(good)).Current
	s.Apply(cm(map[string]string{SystemConfigKey: `{`}))
	r = s.Apply(cm(good))
	if r.Current.values[SystemConfigKey] != v1.values[SystemConfigKey] {
		t.Error("reverting to the text in force must reuse its value, so no node is enqueued")
	}
	expectDiff(t, "notices", []noticeSummary{{Key: SystemConfigKey, Reason: ReasonRecovered, Message: "system-config: valid again; its error is cleared"}}, summarize(r.Notices()))
}

func TestFieldWarningNotices(t *testing.T) {
	s := NewStore()
	data := map[string]string{ResourceThresholdConfigKey: `{"clusterStrategy": {"CPUEvictTimeWindowSeconds": 60, "enabled": true}}`}
	var got []noticeSummary
	for _, n := range s.Apply(cm(data)).Notices() {
		if n.Reason == ReasonFieldWarnings {
			got = append(got, noticeSummary(n))
		}
	}
	want := []noticeSummary{{Key: ResourceThresholdConfigKey, Warning: true, Reason: ReasonFieldWarnings, Message: `resource-threshold-config: clusterStrategy.CPUEvictTimeWindowSeconds: ` +
		`matched field "cpuEvictTimeWindowSeconds" ignoring case; write "cpuEvictTimeWindowSeconds"; clusterStrategy.enabled: unknown field, ignored`}}
	expectDiff(t, "field warnings", want, got)
}

// TestNodeChanged checks that each consumer's NodeChangedFunc picks exactly the nodes whose derived object changes.
func TestNodeChanged(t *testing.T) {
	base := map[string]string{
		ColocationConfigKey:        `{"enable": true, "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuReclaimThresholdPercent": 40}]}`,
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuSuppressThresholdPercent": 50}]}`,
	}
	nodes := map[string]map[string]string{"a1": {"pool": "a"}, "a2": {"pool": "a"}, "b1": {"pool": "b"}, "none": nil}
	changedNodes := func(old, new *Snapshot, f NodeChangedFunc) []string {
		var out []string
		for name, l := range nodes {
			if f(old, new, l) {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out
	}
	edit := func(key, value string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		out[key] = value
		return out
	}
	tests := []struct {
		name                            string
		data                            map[string]string
		colocation, nodeSLO, nodeMetric []string
	}{
		{"same text", base, nil, nil, nil},
		{"whitespace only", edit(ResourceThresholdConfigKey, " "+base[ResourceThresholdConfigKey]+"\n"), nil, nil, nil},
		{"rejected edit", edit(ResourceThresholdConfigKey, `{"clusterStrategy": {"enable": 1}}`), nil, nil, nil},
		{"node override of threshold", edit(ResourceThresholdConfigKey,
			`{"clusterStrategy": {"enable": true}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuSuppressThresholdPercent": 45}]}`),
			nil, []string{"a1", "a2"}, nil},
		{"cluster threshold", edit(ResourceThresholdConfigKey,
			`{"clusterStrategy": {"enable": false}, "nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuSuppressThresholdPercent": 50}]}`),
			nil, []string{"a1", "a2", "b1", "none"}, nil},
		{"colocation of pool a", edit(ColocationConfigKey,
			`{"enable": true, "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuReclaimThresholdPercent": 45}]}`),
			[]string{"a1", "a2"}, nil, nil},
		{"report interval of the others", edit(ColocationConfigKey,
			`{"enable": true, "metricReportIntervalSeconds": 30, "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "cpuReclaimThresholdPercent": 40, "metricReportIntervalSeconds": 60}]}`),
			[]string{"b1", "none"}, nil, []string{"b1", "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			old := s.Apply(cm(base)).Current
			cur := s.Apply(cm(tt.data)).Current
			expectDiff(t, "ColocationChanged", tt.colocation, changedNodes(old, cur, ColocationChanged))
			expectDiff(t, "NodeSLOChanged", tt.nodeSLO, changedNodes(old, cur, NodeSLOChanged))
			expectDiff(t, "NodeMetricChanged", tt.nodeMetric, changedNodes(old, cur, NodeMetricChanged))
			if got := changedNodes(nil, cur, NodeSLOChanged); len(got) != len(nodes) {
				t.Errorf("the first load must count as a change for every node, got %v", got)
			}
		})
	}
}

// TestNodeSource runs the source against a client holding four nodes and a real work queue.
func TestNodeSource(t *testing.T) {
	nodes := fake.NewClientBuilder().WithObjects(
		testutil.Node("a1").Label("pool", "a").Obj(), testutil.Node("a2").Label("pool", "a").Obj(),
		testutil.Node("b1").Label("pool", "b").Obj(), testutil.Node("c1").Obj(),
	).Build()
	s := NewStore()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.NodeSource(nodes, NodeSLOChanged).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	drain := func(want int) []string {
		t.Helper()
		var got []string
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			if q.Len() == 0 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			r, _ := q.Get()
			got = append(got, r.Name)
			q.Done(r)
			q.Forget(r)
		}
		time.Sleep(100 * time.Millisecond) // nothing more may arrive
		for q.Len() > 0 {
			r, _ := q.Get()
			got = append(got, r.Name)
			q.Done(r)
		}
		sort.Strings(got)
		return got
	}
	s.Apply(cm(map[string]string{SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 100}}`}))
	expectDiff(t, "first load enqueues every node", []string{"a1", "a2", "b1", "c1"}, drain(4))
	s.Apply(cm(map[string]string{SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 100},
		"nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "watermarkScaleFactor": 200}]}`}))
	expectDiff(t, "an override for pool a enqueues its nodes only", []string{"a1", "a2"}, drain(2))
	s.Apply(cm(map[string]string{SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 100}, "nodeStrategies": [}`}))
	s.Apply(cm(map[string]string{ColocationConfigKey: `{"enable": true}`, SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 100},
		"nodeStrategies": [{"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}}, "watermarkScaleFactor": 200}]}`}))
	if got := drain(0); len(got) != 0 {
		t.Errorf("a rejected edit and a colocation change do not touch NodeSLOs, but enqueued %v", got)
	}
}

// TestRestoreKeepsLastGoodAcrossARestart: a new store stands for a restarted manager. Restored with the last good
// values saved before the restart, its first Apply keeps a key whose value in the ConfigMap is now rejected at its
// last good value, as the store before the restart did, instead of at the defaults (which once meant colocation
// off, batch removed from every node). Keys valid in the ConfigMap, or absent from it, are not affected by what was restored.
func TestRestoreKeepsLastGoodAcrossARestart(t *testing.T) {
	good := `{"enable": true, "cpuReclaimThresholdPercent": 70}`
	bad := `{"enable": true, "cpuReclaimThresholdPercent": 170}`
	data := map[string]string{
		ColocationConfigKey:        bad,
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true}}`,
	}

	// Without Restore (the old behaviour), the rejected key is at its defaults: colocation off.
	if c := NewStore().Apply(cm(data)).Current.Colocation(nil); *c.Enable {
		t.Fatal("without restored values a rejected colocation-config must be at its defaults")
	}

	s := NewStore()
	err := s.Restore(map[string]string{
		ColocationConfigKey:        good,
		ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": false}}`,
		CPUBurstConfigKey:          `{"clusterStrategy": {"policy": "auto"}}`,
		SystemConfigKey:            `{"clusterStrategy": {"minFreeKbytesFactor": 5000}}`,
		"colocation":               "{}",
	})
	want := "colocation: not a key of the config (known keys: colocation-config, resource-threshold-config, resource-qos-config, " +
		"cpu-burst-config, system-config, host-application-config, cpu-normalization-config, resource-amplification-config)\n" +
		"system-config: clusterStrategy.minFreeKbytesFactor: Invalid value: 5000: must be from 1 to 1000"
	if err == nil || err.Error() != want {
		t.Errorf("Restore error:\n got %v\nwant %s", err, want)
	}
	if s.Current() != nil {
		t.Fatal("Restore published a snapshot; only Apply may")
	}

	r := s.Apply(cm(data))
	if !r.Changed || r.Previous != nil || r.Current.Version() != 1 {
		t.Fatalf("first apply after a restore: %+v", r)
	}
	c := r.Current.Colocation(nil)
	if !*c.Enable || *c.CPUReclaimThresholdPercent != 70 {
		t.Errorf("colocation %+v, want the last good value (enable, 70)", c)
	}
	st := r.Current.Key(ColocationConfigKey)
	if st.Source != SourceLastGood || st.Err == nil || st.AppliedText() != good {
		t.Errorf("colocation-config status %+v, want LastGood with the ConfigMap's error", st)
	}
	// A key valid in the ConfigMap applies; a key absent from it is at its defaults, whatever was restored.
	if st := r.Current.Key(ResourceThresholdConfigKey); st.Source != SourceConfigMap || !*r.Current.NodeSLOSpec(nil).ResourceUsedThresholdWithBE.Enable {
		t.Errorf("resource-threshold-config %+v, want the ConfigMap's value", st)
	}
	if st := r.Current.Key(CPUBurstConfigKey); st.Source != SourceDefault || r.Current.NodeSLOSpec(nil).WithDefaults().CPUBurstStrategy.Policy != slov1alpha1.CPUBurstNone {
		t.Errorf("cpu-burst-config %+v, want the defaults: it is absent from the ConfigMap", st)
	}
	expectDiff(t, "notices", []noticeSummary{
		{Key: ColocationConfigKey, Warning: true, Reason: ReasonInvalid,
			Message: "colocation-config: cpuReclaimThresholdPercent: Invalid value: 170: must be from 0 to 100; keeping the last good value"},
		{Reason: ReasonApplied, Message: "version 1 in force; changed: colocation-config (LastGood), resource-threshold-config (ConfigMap), " +
			"resource-qos-config (Default), cpu-burst-config (Default), system-config (Default), host-application-config (Default), cpu-normalization-config (Default), resource-amplification-config (Default)"},
	}, summarize(r.Notices()))

	// Fixed later, the key applies and says it recovered.
	r = s.Apply(cm(map[string]string{ColocationConfigKey: `{"enable": true}`, ResourceThresholdConfigKey: data[ResourceThresholdConfigKey]}))
	if st := r.Current.Key(ColocationConfigKey); st.Source != SourceConfigMap || st.Err != nil {
		t.Errorf("after the fix: %+v", st)
	}
	if err := s.Restore(map[string]string{ColocationConfigKey: good}); err == nil {
		t.Error("Restore after the first Apply must fail")
	}
}
