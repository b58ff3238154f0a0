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

// +kubebuilder:rbac:groups="",namespace=gleaner-system,resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=gleaner-system,resources=events,verbs=create;patch

// Controller applies every version of the ConfigMap to the Store and tells the user, through events on the
// ConfigMap, what was rejected, warned about, recovered and applied.
type Controller struct {
	store     *sloconfig.Store
	configMap types.NamespacedName
	registry  prometheus.Registerer

	client   client.Client
	recorder events.EventRecorder
	metrics  *configMetrics
}

// New returns the controller for the ConfigMap named configMap, writing into store. Its metrics go to reg (the
// manager passes the registry it serves); nil keeps them in a registry of their own that nobody serves, for tests.
func New(store *sloconfig.Store, configMap types.NamespacedName, reg prometheus.Registerer) *Controller {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Controller{store: store, configMap: configMap, registry: reg}
}

// Name returns Name.
func (c *Controller) Name() string { return Name }

// SetupWithManager watches the ConfigMap, and enqueues it once at start so that its absence is loaded too (a
// missing ConfigMap produces no watch event, and the other controllers wait for the first load).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.client = mgr.GetClient()
	c.recorder = mgr.GetEventRecorder("gleaner-manager")
	m, err := registerMetrics(c.registry)
	if err != nil {
		return err
	}
	c.metrics = m
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

// Reconcile applies the ConfigMap as it is now (or its absence) to the Store.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, req.NamespacedName, cm); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading ConfigMap %s: %w", req.NamespacedName, err)
		}
		cm = nil
	}
	res := c.store.Apply(cm)
	c.metrics.observe(res.Current)
	if !res.Changed {
		return reconcile.Result{}, nil
	}
	if cm == nil {
		logger.Info("ConfigMap not found: every key is at its defaults", "configMap", req.NamespacedName, "version", res.Current.Version())
	}
	// Events need an object to be about; when the ConfigMap is gone they are recorded against its name.
	regarding := cm
	if regarding == nil {
		regarding = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	}
	for _, n := range res.Notices() {
		eventType := corev1.EventTypeNormal
		if n.Warning {
			eventType = corev1.EventTypeWarning
		}
		logger.Info("slo config", "reason", n.Reason, "message", n.Message, "version", res.Current.Version())
		// The events API folds events with the same reason and action into one series that keeps the first note,
		// so each key gets its own action: two keys rejected by one edit are two events, each with its message.
		action := "ApplySLOConfig"
		if n.Key != "" {
			action += "/" + n.Key
		}
		c.recorder.Eventf(regarding, nil, eventType, n.Reason, action, "%s", truncate(n.Message, maxEventNote))
	}
	return reconcile.Result{}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// configMetrics are the Prometheus gauges of the config in force.
type configMetrics struct {
	version  prometheus.Gauge
	keyValid *prometheus.GaugeVec
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
	}
	for _, c := range []prometheus.Collector{m.version, m.keyValid} {
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
	}
}
