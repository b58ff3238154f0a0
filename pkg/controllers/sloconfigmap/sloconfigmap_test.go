package sloconfigmap_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// start runs the controller against the API server in a fresh namespace and returns its store and ConfigMap key.
func start(t *testing.T) (*testenv.Env, *sloconfig.Store, types.NamespacedName) {
	e, store, key, _ := startWithMetrics(t)
	return e, store, key
}

// startWithMetrics is start, also returning the registry that holds the controller's metrics.
func startWithMetrics(t *testing.T) (*testenv.Env, *sloconfig.Store, types.NamespacedName, *prometheus.Registry) {
	t.Helper()
	e := env.Start(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "slo-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns.Name, Name: "slo-controller-config"}
	store := sloconfig.NewStore()
	reg := prometheus.NewRegistry()
	e.StartManager(t, sloconfigmap.New(store, key, reg).SetupWithManager)
	return e, store, key, reg
}

// expectKeyValid checks gleaner_slo_config_key_valid of key in reg.
func expectKeyValid(t *testing.T, reg *prometheus.Registry, key string, want float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gleaner_slo_config_key_valid" {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == key {
				if got := m.GetGauge().GetValue(); got != want {
					t.Errorf("gleaner_slo_config_key_valid{key=%q} = %v, want %v", key, got, want)
				}
				return
			}
		}
	}
	t.Errorf("no gleaner_slo_config_key_valid{key=%q} in the controller's registry", key)
}

func waitFor(t *testing.T, what string, f func() error) { t.Helper(); testenv.Eventually(t, what, f) }

// waitVersion waits until the store has published at least version v.
func waitVersion(t *testing.T, store *sloconfig.Store, v uint64) *sloconfig.Snapshot {
	t.Helper()
	var s *sloconfig.Snapshot
	waitFor(t, fmt.Sprintf("snapshot version %d", v), func() error {
		if s = store.Current(); s == nil || s.Version() < v {
			return fmt.Errorf("store at %v", s)
		}
		return nil
	})
	return s
}

// waitEvent waits for an event on the ConfigMap with this reason whose note contains every one of want.
func waitEvent(t *testing.T, c client.Client, key types.NamespacedName, eventType, reason string, want ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s event %s %q", eventType, reason, want), func() error {
		var list eventsv1.EventList
		if err := c.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
			return err
		}
		var seen []string
	events:
		for _, ev := range list.Items {
			if ev.Regarding.Kind != "ConfigMap" || ev.Regarding.Name != key.Name || ev.Type != eventType || ev.Reason != reason {
				continue
			}
			seen = append(seen, ev.Note)
			for _, w := range want {
				if !strings.Contains(ev.Note, w) {
					continue events
				}
			}
			return nil
		}
		return fmt.Errorf("events with that reason: %q", seen)
	})
}

func TestAbsentConfigMapLoadsDefaults(t *testing.T) {
	_, store, _ := start(t)
	s := waitVersion(t, store, 1)
	for _, k := range s.KeyStatuses() {
		if k.Source != sloconfig.SourceDefault {
			t.Errorf("%s: %+v, want the defaults", k.Key, k)
		}
	}
}

// TestMalformedKeyKeepsLastGoodValue edits the ConfigMap the way a user would and checks the store and the events
// on the ConfigMap after each edit.
func TestMalformedKeyKeepsLastGoodValue(t *testing.T) {
	e, store, key, reg := startWithMetrics(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{
		sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 60}}`,
		sloconfig.CPUBurstConfigKey:          `{"clusterStrategy": {"policy": "auto"}}`,
	}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap applied", func() error {
		if s := store.Current(); s == nil || s.Key(sloconfig.CPUBurstConfigKey).Source != sloconfig.SourceConfigMap {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	waitEvent(t, e.Client, key, corev1.EventTypeNormal, sloconfig.ReasonApplied, "cpu-burst-config (ConfigMap)")

	// Break one key (the trailing comma of Koordinator's template) while changing another.
	cm.Data[sloconfig.CPUBurstConfigKey] = `{"clusterStrategy": {"policy": "none",}}`
	cm.Data[sloconfig.ResourceThresholdConfigKey] = `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 50}}`
	if err := e.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	wantErr := "cpu-burst-config: malformed JSON at line 1, column 39: invalid character '}' looking for beginning of object key string"
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfig.ReasonInvalid, wantErr+"; keeping the last good value")
	s := store.Current()
	spec := s.NodeSLOSpec(nil)
	if got := spec.CPUBurstStrategy.Policy; got != "auto" {
		t.Errorf("the malformed key must keep its last good value auto, got %q", got)
	}
	if got := *spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent; got != 50 {
		t.Errorf("the other key must still apply: cpuSuppressThresholdPercent %d, want 50", got)
	}
	if st := s.Key(sloconfig.CPUBurstConfigKey); st.Source != sloconfig.SourceLastGood || st.Err == nil || st.Err.Error() != wantErr {
		t.Errorf("status %+v", st)
	}
	expectKeyValid(t, reg, sloconfig.CPUBurstConfigKey, 0)
	expectKeyValid(t, reg, sloconfig.ResourceThresholdConfigKey, 1)

	// Fix it.
	cm.Data[sloconfig.CPUBurstConfigKey] = `{"clusterStrategy": {"policy": "none"}}`
	if err := e.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.Client, key, corev1.EventTypeNormal, sloconfig.ReasonRecovered, "cpu-burst-config: valid again")
	expectKeyValid(t, reg, sloconfig.CPUBurstConfigKey, 1)
	if got := store.Current().NodeSLOSpec(nil).CPUBurstStrategy.Policy; got != "none" {
		t.Errorf("fixed value: policy %q, want none", got)
	}

	// Delete the ConfigMap: every key returns to its defaults.
	if err := e.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "defaults after deletion", func() error {
		for _, k := range store.Current().KeyStatuses() {
			if k.Source != sloconfig.SourceDefault {
				return fmt.Errorf("%s is %s", k.Key, k.Source)
			}
		}
		return nil
	})
	waitEvent(t, e.Client, key, corev1.EventTypeNormal, sloconfig.ReasonApplied, "resource-threshold-config (Default)", "cpu-burst-config (Default)")
}

// TestFieldWarningsAreEvents applies Koordinator's CPU-eviction example: it applies, and the Warning event names the
// field matched ignoring case.
func TestFieldWarningsAreEvents(t *testing.T) {
	e, store, key := start(t)
	raw, err := os.ReadFile("../../sloconfig/testdata/seed002/cpu-evict/resource-threshold-config.json")
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string]string{sloconfig.ResourceThresholdConfigKey: string(raw), "colocation": "{}"}}
	if err := e.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfig.ReasonFieldWarnings,
		`resource-threshold-config: clusterStrategy.CPUEvictTimeWindowSeconds: matched field "cpuEvictTimeWindowSeconds" ignoring case`)
	waitEvent(t, e.Client, key, corev1.EventTypeWarning, sloconfig.ReasonFieldWarnings, "unknown keys ignored: colocation")
	if got := *store.Current().NodeSLOSpec(nil).ResourceUsedThresholdWithBE.CPUEvictTimeWindowSeconds; got != 60 {
		t.Errorf("cpuEvictTimeWindowSeconds %d, want 60", got)
	}
}

// TestUnreachableAPIServer: while the ConfigMap cannot be read, nothing is published (a failed read is not an
// absent ConfigMap, which would put the defaults in force); once it can, the controller's retry loads it.
func TestUnreachableAPIServer(t *testing.T) {
	e := env.Start(t)
	var failing atomic.Bool
	failing.Store(true)
	failReads := func(o *ctrl.Options) {
		o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.ConfigMap); ok && failing.Load() {
						return errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}), nil
		}
	}
	key := types.NamespacedName{Namespace: "default", Name: "slo-controller-config"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string]string{sloconfig.SystemConfigKey: `{"clusterStrategy": {"minFreeKbytesFactor": 300}}`}}
	if err := e.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	store := sloconfig.NewStore()
	e.StartManager(t, sloconfigmap.New(store, key, nil).SetupWithManager, failReads)
	// The controller is retrying with back-off meanwhile; nothing may be published.
	time.Sleep(2 * time.Second)
	if s := store.Current(); s != nil {
		t.Fatalf("a failed read published version %d", s.Version())
	}
	failing.Store(false)
	s := waitVersion(t, store, 1)
	if got := s.NodeSLOSpec(nil).SystemStrategy.MinFreeKbytesFactor; got == nil || *got != 300 {
		t.Errorf("after the API server came back: minFreeKbytesFactor %v, want 300", got)
	}
}
