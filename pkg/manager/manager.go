package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/controllers/webhookcert"
	"github.com/gleaner-sh/gleaner/pkg/serving"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
	"github.com/gleaner-sh/gleaner/pkg/version"
	"github.com/gleaner-sh/gleaner/pkg/webhook/colocationprofile"
	"github.com/gleaner-sh/gleaner/pkg/webhook/configmap"
	"github.com/gleaner-sh/gleaner/pkg/webhook/nodeamplification"
)

// NewScheme returns a scheme with the built-in kinds and Gleaner's.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding built-in kinds to the scheme: %w", err)
	}
	if err := slov1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", slov1alpha1.GroupVersion, err)
	}
	if err := configv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", configv1alpha1.GroupVersion, err)
	}
	return s, nil
}

// RESTConfig loads the client configuration the options point at.
func (o *Options) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (--kubeconfig %q, $KUBECONFIG, ~/.kube/config or in-cluster): %w", o.Kubeconfig, err)
	}
	return cfg, nil
}

// Run starts gleaner-manager against the cluster the options point at and blocks until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	cfg, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	if err := CheckReachable(cfg, opts.ConnectTimeout); err != nil {
		return err
	}
	if opts.Webhook.Port != 0 && opts.Webhook.CertSecret != "" && opts.Webhook.CertDir == "" {
		dir, err := os.MkdirTemp("", "gleaner-webhook-certs-")
		if err != nil {
			return fmt.Errorf("creating a directory for the webhook certificate: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		o := *opts
		o.Webhook.CertDir = dir
		opts = &o
	}
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	if err := addCertProvisioner(ctx, mgr, cfg, opts); err != nil {
		return err
	}
	ctrl.Log.WithName("gleaner-manager").Info("serving", "version", version.Get().String(), "apiServer", cfg.Host, "metrics", opts.MetricsAddr, "metricsSecure", opts.Serving.SecureMetrics,
		"health", opts.HealthAddr, "leaderElection", opts.LeaderElect, "namespace", opts.Namespace, "webhookPort", opts.Webhook.Port)
	return mgr.Start(ctx)
}

// CheckReachable asks the API server for its version, so that a wrong or missing cluster is one clear error at
// start-up instead of an endless retry loop in every informer.
func CheckReachable(cfg *rest.Config, timeout time.Duration) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return fmt.Errorf("creating a discovery client for %s: %w", cfg.Host, err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the Kubernetes API server at %s (check --kubeconfig and the cluster): %w", cfg.Host, err)
	}
	return nil
}

// New builds the controller-runtime manager with the SLO config loader and every enabled controller set up, ready
// to Start.
func New(cfg *rest.Config, opts *Options) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	shutdown := opts.ShutdownTimeout
	sloConfigMap := types.NamespacedName{Namespace: opts.Namespace, Name: opts.SLOConfigName}
	var webhookServer webhook.Server
	if opts.Webhook.Port != 0 {
		webhookServer = webhook.NewServer(webhook.Options{
			Host: opts.Webhook.Host, Port: opts.Webhook.Port, CertDir: opts.Webhook.CertDir, TLSOpts: opts.Serving.TLSOpts(),
		})
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         CacheOptions(opts.Namespace),
		Controller:                    ControllerConfig(opts.CacheSyncTimeout),
		WebhookServer:                 webhookServer,
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaderElection.LeaseDuration,
		RenewDeadline:                 &opts.LeaderElection.RenewDeadline,
		RetryPeriod:                   &opts.LeaderElection.RetryPeriod,
		GracefulShutdownTimeout:       &shutdown,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	// The pod cache, shared by the controllers that read pods; it fills on every replica, as the informers do.
	pods, err := podcache.ForManager(mgr, nil)
	if err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr, pods)); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	if webhookServer != nil {
		// GetWebhookServer (not the variable) adds the server to the manager's runnables.
		mgr.GetWebhookServer().Register(configmap.Path, configmap.NewValidator(sloConfigMap).Webhook())
		if err := colocationprofile.Register(context.Background(), mgr, ctrlmetrics.Registry); err != nil {
			return nil, fmt.Errorf("setting up the colocation profile webhook: %w", err)
		}
		nodeamplification.Register(mgr)
		if err := mgr.AddReadyzCheck("webhook", webhookServer.StartedChecker()); err != nil {
			return nil, fmt.Errorf("adding the webhook readiness check: %w", err)
		}
	}
	// One registry for every metric, the one the metrics server serves. A second manager in the same process (which
	// controller-runtime's unique controller names rule out anyway) would get a clear duplicate-registration error.
	deps := Deps{Options: opts, Clock: clock.RealClock{}, Metrics: ctrlmetrics.Registry, SLOConfig: sloconfig.NewStore(), Pods: pods}
	if err := deps.Metrics.Register(version.NewCollector(version.Get())); err != nil {
		return nil, fmt.Errorf("registering gleaner_build_info: %w", err)
	}
	// The config loader before the controllers that read its store; it is not in --controllers' choice.
	if err := sloconfigmap.New(deps.SLOConfig, sloConfigMap, deps.Metrics).WithClock(deps.Clock).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the SLO config loader: %w", err)
	}
	for _, c := range controllers(deps) {
		if !toggle.Enabled(opts.Controllers, c.Name()) {
			continue
		}
		if err := c.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up controller %s: %w", c.Name(), err)
		}
	}
	return mgr, nil
}

// metricsOptions serves /metrics as opts.Serving says: HTTPS behind the API server's authentication and
// authorization (the serving identity's rights: config/rbac/metrics_auth_role.yaml), or plain HTTP on loopback.
func metricsOptions(opts *Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.MetricsAddr, SecureServing: opts.Serving.SecureMetrics}
	if opts.Serving.SecureMetrics {
		m.FilterProvider = serving.FilterProvider(clock.RealClock{})
		m.CertDir = opts.Serving.MetricsCertDir
		m.TLSOpts = opts.Serving.TLSOpts()
	}
	return m
}

// addCertProvisioner, when the manager manages the webhook certificate, makes sure the certificate exists before
// the webhook server starts (it fails without one), and keeps it and the webhook configurations' caBundle current
// while the manager runs.
func addCertProvisioner(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, opts *Options) error {
	if opts.Webhook.Port == 0 || opts.Webhook.CertSecret == "" {
		return nil
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating a client for the webhook certificate: %w", err)
	}
	p, err := webhookcert.New(c, clock.RealClock{}, ctrlmetrics.Registry, webhookcert.Options{
		Namespace:                 opts.Namespace,
		SecretName:                opts.Webhook.CertSecret,
		ServiceName:               opts.Webhook.ServiceName,
		ConfigurationName:         opts.Webhook.ConfigurationName,
		MutatingConfigurationName: opts.Webhook.MutatingConfigurationName,
		CertDir:                   opts.Webhook.CertDir,
	})
	if err != nil {
		return err
	}
	if err := p.Ensure(ctx); err != nil {
		return fmt.Errorf("preparing the webhook certificate: %w", err)
	}
	if err := mgr.Add(p); err != nil {
		return fmt.Errorf("adding the webhook certificate provisioner: %w", err)
	}
	return nil
}

// informersSynced is ready once the manager's informer caches hold a full list of what they watch.
func informersSynced(mgr ctrl.Manager, pods *podcache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		if !pods.HasSynced() {
			return errors.New("the pod cache has not listed the pods yet")
		}
		return nil
	}
}
