package sloconfigmap

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the loader's controller name, in logs and workqueue metrics. It is not a --controllers choice: the loader
// always runs.
const Name = "sloconfig"

// maxEventNote is the longest note the events.k8s.io API accepts.
const maxEventNote = 1024

// Reading the SLO ConfigMap (and, through the API reader, the companion of the last good values: get), writing the
// companion (update by name; create cannot be limited to one name, so the Role allows creating ConfigMaps in the
// manager's namespace), and recording events.
//
// +kubebuilder:rbac:groups="",namespace=gleaner-system,resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=gleaner-system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=gleaner-system,resources=configmaps,resourceNames=slo-controller-config-last-good,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,namespace=gleaner-system,resources=events,verbs=create;patch

// Event reasons of the loader itself, next to the sloconfig.Reason* ones of the config.
const (
	// ReasonOnLastGood: keys run on their last good value; the message names them and where each value came from.
	ReasonOnLastGood = "SLOConfigOnLastGood"
	// ReasonLastGoodUnusable: the saved last good values could not be read, in whole or in part.
	ReasonLastGoodUnusable = "SLOConfigLastGoodUnusable"
)

// Controller applies every version of the ConfigMap to the Store and tells the user, through events on the
// ConfigMap, what was rejected, warned about, recovered and applied. It saves the last good value of each key in a
// companion ConfigMap (LastGoodName) and restores them before its first Apply, so a restart does not drop a rejected
// key to its defaults. Like every controller of the manager it runs on the leader only, so only the leader writes
// the companion.
type Controller struct {
	store     *sloconfig.Store
	configMap types.NamespacedName
	clock     clock.PassiveClock
	registry  prometheus.Registerer

	client   client.Client
	reader   client.Reader // the API server itself, for the companion: read rarely, and right after our own writes
	recorder events.EventRecorder
	metrics  *configMetrics

	// Reconcile runs one at a time (one request, one worker), so these need no lock.
	loaded    bool                // the companion was read and restored
	saved     map[string]savedKey // what the companion holds, as far as the loader knows
	announced string              // the keys on a last good value the last ReasonOnLastGood event named
}

// New returns the controller for the ConfigMap named configMap, writing into store. Its metrics go to reg (the
// manager passes the registry it serves); nil keeps them in a registry of their own that nobody serves, for tests.
// The saved values are stamped with the real clock unless WithClock says otherwise.
func New(store *sloconfig.Store, configMap types.NamespacedName, reg prometheus.Registerer) *Controller {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Controller{store: store, configMap: configMap, clock: clock.RealClock{}, registry: reg}
}

// WithClock has the controller stamp the values it saves with clk's time; it returns c.
func (c *Controller) WithClock(clk clock.PassiveClock) *Controller {
	c.clock = clk
	return c
}

// Name returns Name.
func (c *Controller) Name() string { return Name }

// RegisterMetrics registers the controller's metrics in the registry New was given. SetupWithManager calls it; the
// metrics reference (internal/metricsref) calls it to list them without a cluster.
func (c *Controller) RegisterMetrics() error {
	m, err := registerMetrics(c.registry)
	if err != nil {
		return err
	}
	c.metrics = m
	return nil
}

// SetupWithManager watches the ConfigMap, and enqueues it once at start so that its absence is loaded too (a
// missing ConfigMap produces no watch event, and the other controllers wait for the first load).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.client, c.reader = mgr.GetClient(), mgr.GetAPIReader()
	c.recorder = mgr.GetEventRecorder("gleaner-manager")
	if err := c.RegisterMetrics(); err != nil {
		return err
	}
	req := reconcile.Request{NamespacedName: c.configMap}
	isOurs := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == c.configMap.Namespace && o.GetName() == c.configMap.Name
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.ConfigMap{}, builder.WithPredicates(isOurs)).
		WatchesRawSource(source.TypedFunc[reconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(req)
			return nil
		})).
		Complete(c)
}

// Reconcile applies the ConfigMap as it is now (or its absence) to the Store, after restoring the saved last good
// values the first time, and saves the last good values again when they changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	// Events need an object to be about; when the ConfigMap is gone they are recorded against its name.
	regarding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, req.NamespacedName, cm); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading ConfigMap %s: %w", req.NamespacedName, err)
		}
		cm = nil
	} else {
		regarding = cm
	}
	if !c.loaded {
		if err := c.loadLastGood(ctx, regarding); err != nil {
			return reconcile.Result{}, err
		}
		c.loaded = true
	}
	res := c.store.Apply(cm)
	c.metrics.observe(res.Current)
	if res.Changed {
		if cm == nil {
			logger.Info("ConfigMap not found: every key is at its defaults", "configMap", req.NamespacedName, "version", res.Current.Version())
		}
		for _, n := range res.Notices() {
			eventType := corev1.EventTypeNormal
			if n.Warning {
				eventType = corev1.EventTypeWarning
			}
			logger.Info("slo config", "reason", n.Reason, "message", n.Message, "version", res.Current.Version())
			c.event(regarding, eventType, n.Reason, n.Key, n.Message)
		}
	}
	// Saved before the event below, so that it names where each value came from; retried until it succeeds (the
	// Store already applied the change: a failed save costs only the next restart's memory of it).
	if err := c.saveLastGood(ctx, res.Current, cm); err != nil {
		return reconcile.Result{}, err
	}
	if summary := c.lastGoodSummary(res.Current); summary != c.announced {
		if summary != "" {
			c.warn(ctx, regarding, ReasonOnLastGood, "running on the last good value (the ConfigMap's current value is rejected): "+summary)
		}
		c.announced = summary
	}
	return reconcile.Result{}, nil
}

// event records one event on the ConfigMap. The events API folds events with the same reason and action into one
// series that keeps the first note, so each key gets its own action: two keys rejected by one edit are two events,
// each with its message.
func (c *Controller) event(regarding *corev1.ConfigMap, eventType, reason, key, message string) {
	action := "ApplySLOConfig"
	if key != "" {
		action += "/" + key
	}
	c.recorder.Eventf(regarding, nil, eventType, reason, action, "%s", truncate(message, maxEventNote))
}

// warn records a Warning event about the loader's own work (not about one key) and logs it.
func (c *Controller) warn(ctx context.Context, regarding *corev1.ConfigMap, reason, message string) {
	log.FromContext(ctx).Info("slo config", "reason", reason, "message", message)
	c.recorder.Eventf(regarding, nil, corev1.EventTypeWarning, reason, "SaveLastGood", "%s", truncate(message, maxEventNote))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// configMetrics are the Prometheus gauges of the config in force.
type configMetrics struct {
	version   prometheus.Gauge
	keyValid  *prometheus.GaugeVec
	keySource *prometheus.GaugeVec
}

func registerMetrics(reg prometheus.Registerer) (*configMetrics, error) {
	m := &configMetrics{
		version: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gleaner_slo_config_version",
			Help: "Version of the slo-controller-config snapshot in force (restarts at 1 with the manager).",
		}),
		keyValid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_slo_config_key_valid",
			Help: "1 when the key's current value in the ConfigMap is in force (or the key is absent), 0 when it was rejected and an earlier value or the defaults are in force.",
		}, []string{"key"}),
		keySource: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gleaner_slo_config_key_source",
			Help: "1 for where the value in force of the key comes from, 0 for the other sources: ConfigMap (its current value), LastGood (an earlier value, kept while the current one is rejected, across restarts too), Default.",
		}, []string{"key", "source"}),
	}
	for _, c := range []prometheus.Collector{m.version, m.keyValid, m.keySource} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the SLO config metrics: %w", err)
		}
	}
	return m, nil
}

func (m *configMetrics) observe(s *sloconfig.Snapshot) {
	m.version.Set(float64(s.Version()))
	for _, k := range s.KeyStatuses() {
		v := 1.0
		if k.Err != nil {
			v = 0
		}
		m.keyValid.WithLabelValues(k.Key).Set(v)
		for _, src := range []sloconfig.KeySource{sloconfig.SourceConfigMap, sloconfig.SourceLastGood, sloconfig.SourceDefault} {
			v := 0.0
			if k.Source == src {
				v = 1
			}
			m.keySource.WithLabelValues(k.Key, string(src)).Set(v)
		}
	}
}
