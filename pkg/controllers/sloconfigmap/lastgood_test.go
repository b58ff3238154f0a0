package sloconfigmap_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

// managerIdentity installs the manager's RBAC manifests as shipped (config/rbac: the generated roles and their
// bindings) and returns a client configuration that authenticates as the manager's service account, so a test
// runs the loader with exactly the permissions a cluster gives it.
func managerIdentity(t *testing.T, e *testenv.Env) *rest.Config {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}
	if err := e.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rbac := filepath.Join("..", "..", "..", "config", "rbac")
	args := []string{"apply", "-f", filepath.Join(rbac, "manager", "role.yaml"),
		"-f", filepath.Join(rbac, "manager_role_binding.yaml"), "-f", filepath.Join(rbac, "manager_role_bindings.yaml")}
	if out, err := e.Kubectl(args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	cfg, err := e.UserConfig("system:serviceaccount:gleaner-system:gleaner-manager", "system:serviceaccounts", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// onlyNamespace caches ConfigMaps of ns only, as gleaner-manager does: its service account may not list the
// cluster's.
func onlyNamespace(ns string) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{ns: {}}}}}
	}
}

// lastGood reads the companion ConfigMap.
func lastGood(t *testing.T, c client.Client, key types.NamespacedName) (*corev1.ConfigMap, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	return cm, c.Get(context.Background(), sloconfigmap.LastGoodName(key), cm)
}

// waitLastGood waits until the companion holds exactly data.
func waitLastGood(t *testing.T, c client.Client, key types.NamespacedName, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	waitFor(t, fmt.Sprintf("the last good values %v saved", data), func() error {
		var err error
		if cm, err = lastGood(t, c, key); err != nil {
			return err
		}
		if d := cmp.Diff(data, cm.Data); d != "" {
			return fmt.Errorf("companion data (-want +got):\n%s", d)
		}
		return nil
	})
	return cm
}

// TestRestartKeepsLastGoodValue: a manager runs with a good config and saves it; it stops; a key is made bad (with
// no webhook in the way, or an old value a new version refuses); a new manager, with a new, empty store, keeps that
// key at its last good value from its very first snapshot, and says so in events and a metric. Before the last-good copy the
// new manager put the key at its defaults: for colocation-config, colocation off and batch removed from every node.
// Both managers run as the manager's service account with the shipped RBAC, so its rights to the companion are
// tested too: create, then update by name.
func TestRestartKeepsLastGoodValue(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	cfg := managerIdentity(t, e)
	key := types.NamespacedName{Namespace: "gleaner-system", Name: "slo-controller-config"}
	t.Cleanup(func() {
		for _, n := range []types.NamespacedName{key, sloconfigmap.LastGoodName(key)} {
			_ = e.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}})
		}
	})
	const (
		good1 = `{"enable": true, "cpuReclaimThresholdPercent": 50}`
		good2 = `{"enable": true, "cpuReclaimThresholdPercent": 70}`
		bad   = `{"enable": true, "cpuReclaimThresholdPercent": 170}`
		burst = `{"clusterStrategy": {"policy": "auto"}}`
	)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string]string{sloconfig.ColocationConfigKey: good1, sloconfig.CPUBurstConfigKey: burst}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	accepted := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

	t.Run("first manager saves the values it accepts", func(t *testing.T) {
		store := sloconfig.NewStore()
		c := sloconfigmap.New(store, key, nil).WithClock(clocktesting.NewFakePassiveClock(accepted))
		e.StartManagerAs(t, cfg, c.SetupWithManager, onlyNamespace(key.Namespace))
		waitLastGood(t, e.Client, key, map[string]string{sloconfig.ColocationConfigKey: good1, sloconfig.CPUBurstConfigKey: burst})

		cm.Data[sloconfig.ColocationConfigKey] = good2
		if err := e.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		saved := waitLastGood(t, e.Client, key, map[string]string{sloconfig.ColocationConfigKey: good2, sloconfig.CPUBurstConfigKey: burst})
		want := fmt.Sprintf(`{"resourceVersion":%q,"acceptedAt":"2026-05-04T10:00:00Z"}`, cm.ResourceVersion)
		if got := saved.Annotations[sloconfigmap.AnnotationLastGoodPrefix+sloconfig.ColocationConfigKey]; got != want {
			t.Errorf("annotation of colocation-config %s, want %s", got, want)
		}
	}) // the first manager stops here
	acceptedRV := cm.ResourceVersion

	cm.Data[sloconfig.ColocationConfigKey] = bad
	if err := e.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	store := sloconfig.NewStore()
	reg := prometheus.NewRegistry()
	e.StartManagerAs(t, cfg, sloconfigmap.New(store, key, reg).SetupWithManager, onlyNamespace(key.Namespace))
	s := waitVersion(t, store, 1)
	// Version 1 is the first snapshot the other controllers could read: the key was never at its defaults.
	if s.Version() != 1 {
		t.Fatalf("version %d: the config changed after the first load", s.Version())
	}
	if st := s.Key(sloconfig.ColocationConfigKey); st.Source != sloconfig.SourceLastGood || st.AppliedText() != good2 || st.Err == nil {
		t.Errorf("colocation-config after the restart: %+v, want the last good value with the ConfigMap's error", st)
	}
	if c := s.Colocation(nil); !*c.Enable || *c.CPUReclaimThresholdPercent != 70 {
		t.Errorf("colocation after the restart: enable %v, cpuReclaimThresholdPercent %d; want the last good true, 70", *c.Enable, *c.CPUReclaimThresholdPercent)
	}
	if st := s.Key(sloconfig.CPUBurstConfigKey); st.Source != sloconfig.SourceConfigMap {
		t.Errorf("cpu-burst-config after the restart: %+v, want the ConfigMap's value", st)
	}
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfig.ReasonInvalid,
		"colocation-config: cpuReclaimThresholdPercent: Invalid value: 170: must be from 0 to 100; keeping the last good value")
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfigmap.ReasonOnLastGood,
		"running on the last good value (the ConfigMap's current value is rejected): colocation-config (accepted from resourceVersion "+
			acceptedRV+" at 2026-05-04T10:00:00Z)")
	if got := keySources(t, reg, sloconfig.ColocationConfigKey); got != [3]float64{0, 1, 0} {
		t.Errorf("gleaner_slo_config_key_source of colocation-config (ConfigMap, LastGood, Default) = %v, want 0, 1, 0", got)
	}
	expectKeyValid(t, reg, sloconfig.ColocationConfigKey, 0)
	// The rejected value never reaches the companion.
	if saved, err := lastGood(t, e.Client, key); err != nil || saved.Data[sloconfig.ColocationConfigKey] != good2 {
		t.Errorf("companion after the restart: %v, %v; want colocation-config still %s", saved.Data, err, good2)
	}

	// Removing the key is a decision, not a mistake: it goes to its defaults and is forgotten, so the next restart
	// does the same.
	delete(cm.Data, sloconfig.ColocationConfigKey)
	if err := e.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitLastGood(t, e.Client, key, map[string]string{sloconfig.CPUBurstConfigKey: burst})
	if st := store.Current().Key(sloconfig.ColocationConfigKey); st.Source != sloconfig.SourceDefault {
		t.Errorf("removed key: %+v, want the defaults", st)
	}
}

// keySources returns gleaner_slo_config_key_source of key in reg for the sources ConfigMap, LastGood and Default.
func keySources(t *testing.T, reg *prometheus.Registry, key string) [3]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out [3]float64
	found := 0
	for _, f := range families {
		if f.GetName() != "gleaner_slo_config_key_source" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["key"] != key {
				continue
			}
			for i, src := range []sloconfig.KeySource{sloconfig.SourceConfigMap, sloconfig.SourceLastGood, sloconfig.SourceDefault} {
				if labels["source"] == string(src) {
					out[i] = m.GetGauge().GetValue()
					found++
				}
			}
		}
	}
	if found != 3 {
		t.Fatalf("gleaner_slo_config_key_source{key=%q}: %d of the 3 sources reported", key, found)
	}
	return out
}

// TestCorruptedLastGood: a companion edited into garbage (a value that is not JSON, a key Gleaner does not read, an
// annotation that is not what the loader writes, binary data) does not stop the loader: what is usable is restored,
// the rest is named in a Warning event, the keys it concerned are at the ConfigMap's value or their defaults, and the
// companion is rewritten with what is in force.
func TestCorruptedLastGood(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "slo-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns.Name, Name: "slo-controller-config"}
	const threshold = `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 60}}`
	const system = `{"clusterStrategy": {"minFreeKbytesFactor": 300}}`
	name := sloconfigmap.LastGoodName(key)
	companion := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, Annotations: map[string]string{
			sloconfigmap.AnnotationLastGoodPrefix + sloconfig.ResourceThresholdConfigKey: "yesterday",
		}},
		Data: map[string]string{
			sloconfig.ColocationConfigKey:        `{"enable": tru`,
			sloconfig.ResourceThresholdConfigKey: threshold,
			"bogus":                              "{}",
		},
		BinaryData: map[string][]byte{"blob": {0xff}},
	}
	if err := e.Client.Create(ctx, companion); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{
		sloconfig.ColocationConfigKey:        `{"enable": true, "degradeTimeMinutes": 0}`,
		sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 160}}`,
		sloconfig.SystemConfigKey:            system,
	}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	store := sloconfig.NewStore()
	e.StartManager(t, sloconfigmap.New(store, key, nil).SetupWithManager)
	s := waitVersion(t, store, 1)
	if st := s.Key(sloconfig.ColocationConfigKey); st.Source != sloconfig.SourceDefault || st.Err == nil {
		t.Errorf("colocation-config: %+v; its saved value is garbage, so the defaults (with the ConfigMap's error)", st)
	}
	if st := s.Key(sloconfig.ResourceThresholdConfigKey); st.Source != sloconfig.SourceLastGood || st.AppliedText() != threshold {
		t.Errorf("resource-threshold-config: %+v; its saved value is fine and must be in force", st)
	}
	if st := s.Key(sloconfig.SystemConfigKey); st.Source != sloconfig.SourceConfigMap {
		t.Errorf("system-config: %+v, want the ConfigMap's value", st)
	}
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfigmap.ReasonLastGoodUnusable,
		name.String()+", where the last good values are kept, is partly unusable",
		`annotation last-good.gleaner.sh/resource-threshold-config is not {"resourceVersion": ..., "acceptedAt": ...}`,
		"binaryData keys blob are not read",
		"bogus: not a key of the config",
		"colocation-config: malformed JSON at line 1")
	// Rewritten with what is in force; what could not be read is gone.
	saved := waitLastGood(t, e.Client, key, map[string]string{sloconfig.ResourceThresholdConfigKey: threshold, sloconfig.SystemConfigKey: system})
	if len(saved.BinaryData) != 0 {
		t.Errorf("binaryData kept: %v", saved.BinaryData)
	}
	if got := saved.Annotations[sloconfigmap.AnnotationLastGoodPrefix+sloconfig.ResourceThresholdConfigKey]; got != "{}" {
		t.Errorf("annotation of a restored value whose acceptance is unknown: %q, want {}", got)
	}
	if got := saved.Annotations[sloconfigmap.AnnotationLastGoodPrefix+sloconfig.SystemConfigKey]; got == "" || got == "{}" {
		t.Errorf("annotation of a newly accepted value: %q, want its resourceVersion and time", got)
	}
}
