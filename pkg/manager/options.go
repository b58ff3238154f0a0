package manager

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/serving"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
)

// Options configure gleaner-manager. Fill them with AddFlags, or set them directly in tests, then call Validate.
type Options struct {
	// Kubeconfig is the kubeconfig file to use; empty means $KUBECONFIG, ~/.kube/config, then the in-cluster config.
	Kubeconfig string
	// Namespace is where the manager keeps its own objects: the leader-election lease and the SLO ConfigMap.
	Namespace string
	// LeaderElect makes only one replica act at a time.
	LeaderElect bool
	// LeaderElectionID names the leader-election lease.
	LeaderElectionID string
	// LeaderElection holds the lease timings.
	LeaderElection LeaderElectionOptions
	// MetricsAddr is where Prometheus metrics are served; "0" turns them off.
	MetricsAddr string
	// Serving secures the metrics server (HTTPS, authentication, authorization) and the webhook server (HTTP/2).
	Serving serving.Options
	// HealthAddr is where /healthz and /readyz are served; "0" turns them off.
	HealthAddr string
	// PprofAddr is where Go's /debug/pprof profiles are served; "0" (the default) turns them off.
	PprofAddr string
	// ConnectTimeout bounds the first contact with the API server.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds how long running reconciles may take to finish after a stop signal.
	ShutdownTimeout time.Duration
	// CacheSyncTimeout bounds how long a controller waits for the first full list of what it watches (the pods,
	// the nodes, the NodeMetrics) before the manager gives up and exits. It only catches a list that never
	// completes (a missing permission or CRD logs its error meanwhile); a large cluster's first list must fit in it.
	CacheSyncTimeout time.Duration
	// Controllers selects the controllers to run: "*" for all, a name to add one, "-name" to leave one out. The SLO
	// config loader is not among them: it always runs.
	Controllers []string
	// KubeAPIQPS and KubeAPIBurst limit the manager's requests to the API server (client-side token bucket).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// SLOConfigName is the name of the SLO ConfigMap (slo-controller-config) in Namespace.
	SLOConfigName string
	// Webhook configures the admission webhook server.
	Webhook WebhookOptions
	// NodeResource configures the controller that publishes batch and mid resources.
	NodeResource noderesource.Options
}

// WebhookOptions configure the admission webhook server: the validating webhook of the SLO ConfigMap and the
// mutating webhook that applies ColocationProfiles to new pods.
type WebhookOptions struct {
	// Port is where the webhook server listens (TLS); 0 turns the webhook server off.
	Port int
	// Host is the address the server binds; empty means every interface.
	Host string
	// CertDir holds tls.crt and tls.key. With CertSecret set, the manager writes them there itself, into a new
	// temporary directory when CertDir is empty.
	CertDir string
	// CertSecret is the Secret in Namespace where the manager keeps the self-signed CA and serving certificate it
	// generates, shared by every replica. Empty means the certificate is provided in CertDir by something else
	// (cert-manager, or the test API server) and the manager leaves certificates alone.
	CertSecret string
	// ServiceName is the Service in front of the webhook; the certificate is issued for its DNS names.
	ServiceName string
	// ConfigurationName is the ValidatingWebhookConfiguration whose caBundle the manager keeps current when it
	// manages the certificate.
	ConfigurationName string
	// MutatingConfigurationName is the MutatingWebhookConfiguration (the ColocationProfile webhook) whose caBundle
	// the manager keeps current when it manages the certificate; empty leaves it alone.
	MutatingConfigurationName string
}

// LeaderElectionOptions are the leader lease's timings (client-go's leaderelection.LeaderElectionConfig). The
// leader renews the lease every RetryPeriod; when it has not renewed it for RenewDeadline, because the API server
// is out of reach, it stops leading and the manager exits. Another replica takes the lease once the lease has not
// been renewed for LeaseDuration. So RenewDeadline is the API-server outage the leader rides out, and LeaseDuration
// how long a standby waits after the leader died without handing the lease back (a clean stop hands it back).
type LeaderElectionOptions struct {
	// LeaseDuration is how long a standby waits, from the lease's last renewal, before it takes the lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it gives up leading.
	RenewDeadline time.Duration
	// RetryPeriod is the interval between renewals (and between a standby's attempts to take the lease).
	RetryPeriod time.Duration
}

// DefaultLeaderElection returns the lease timings gleaner-manager uses unless told otherwise: a leader rides out an
// API-server outage of 45 s (controller-runtime's defaults, 15 s/10 s/2 s, give up 10 s into one), and a standby
// takes over at most 60 s after the leader died; docs/configuration.md says why.
func DefaultLeaderElection() LeaderElectionOptions {
	return LeaderElectionOptions{LeaseDuration: 60 * time.Second, RenewDeadline: 45 * time.Second, RetryPeriod: 5 * time.Second}
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Namespace:        "gleaner-system",
		LeaderElect:      true,
		LeaderElectionID: "gleaner-manager.slo.gleaner.sh",
		LeaderElection:   DefaultLeaderElection(),
		MetricsAddr:      ":8080",
		Serving:          serving.DefaultOptions(),
		HealthAddr:       ":8081",
		PprofAddr:        "0",
		ConnectTimeout:   10 * time.Second,
		ShutdownTimeout:  30 * time.Second,
		CacheSyncTimeout: 10 * time.Minute,
		Controllers:      []string{"*"},
		KubeAPIQPS:       30,
		KubeAPIBurst:     60,
		SLOConfigName:    "slo-controller-config",
		Webhook: WebhookOptions{
			Port:                      9443,
			CertSecret:                "gleaner-webhook-cert",
			ServiceName:               "gleaner-webhook-service",
			ConfigurationName:         "gleaner-validating-webhook-configuration",
			MutatingConfigurationName: "gleaner-mutating-webhook-configuration",
		},
		NodeResource: noderesource.DefaultOptions(),
	}
}

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config, then in-cluster")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the manager's own objects (leader lease, slo-controller-config)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "run only while holding the leader lease, so one replica acts at a time")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the leader lease")
	fs.DurationVar(&o.LeaderElection.LeaseDuration, "leader-elect-lease-duration", o.LeaderElection.LeaseDuration, "how long a standby waits, from the lease's last renewal, before taking the leader lease (the failover time after a leader dies)")
	fs.DurationVar(&o.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", o.LeaderElection.RenewDeadline, "how long the leader keeps trying to renew its lease before it stops leading and exits (the API-server outage it rides out); below --leader-elect-lease-duration")
	fs.DurationVar(&o.LeaderElection.RetryPeriod, "leader-elect-retry-period", o.LeaderElection.RetryPeriod, "interval between lease renewals and attempts to take the lease; below --leader-elect-renew-deadline / 1.2")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus /metrics endpoint; 0 disables it")
	o.Serving.AddFlags(fs)
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of /healthz and /readyz; 0 disables them")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "address of Go's /debug/pprof profiles; 0 disables them")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", o.ConnectTimeout, "how long to wait for the API server at start-up")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", o.CacheSyncTimeout, "how long a controller waits for the first full list of the objects it watches before the manager exits (docs/operations.md sizes it)")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, "controllers to run: '*' for all, 'name' to add one, '-name' to leave one out (the SLO config loader always runs)")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second to the API server, sustained")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests to the API server allowed in a burst above --kube-api-qps")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long running work may take to finish after a stop signal")
	fs.StringSliceVar(&o.NodeResource.Plugins, "noderesource-plugins", o.NodeResource.Plugins, "node-resource plugins to run: '*' for all, 'name' to add one, '-name' to leave one out")
	fs.IntVar(&o.NodeResource.Workers, "noderesource-workers", o.NodeResource.Workers, "nodes the noderesource controller reconciles at once")
	fs.BoolVar(&o.NodeResource.TermMetrics, "noderesource-term-metrics", o.NodeResource.TermMetrics, "export every derivation term as gleaner_noderesource_term_cpu_cores and _memory_bytes (about 50 series per node, twice that while the deprecated gleaner_noderesource_term is kept; costs scrape CPU on large clusters)")
	fs.Float32Var(&o.NodeResource.ExplanationQPS, "noderesource-explanation-qps", o.NodeResource.ExplanationQPS, "requests per second that write the NodeResourceExplanations (kubectl glean explain), a rate limit of their own beside --kube-api-qps")
	fs.StringVar(&o.SLOConfigName, "slo-config-name", o.SLOConfigName, "name of the SLO ConfigMap in --namespace")
	fs.IntVar(&o.Webhook.Port, "webhook-port", o.Webhook.Port, "port of the admission webhook server (TLS); 0 disables it")
	fs.StringVar(&o.Webhook.Host, "webhook-host", o.Webhook.Host, "address the webhook server binds; empty means all")
	fs.StringVar(&o.Webhook.CertDir, "webhook-cert-dir", o.Webhook.CertDir, "directory with the webhook's tls.crt and tls.key; empty: a temporary directory, when the manager generates them")
	fs.StringVar(&o.Webhook.CertSecret, "webhook-cert-secret", o.Webhook.CertSecret, "Secret in --namespace where the manager keeps the self-signed webhook certificate it generates; empty: certificates are provided in --webhook-cert-dir")
	fs.StringVar(&o.Webhook.ServiceName, "webhook-service-name", o.Webhook.ServiceName, "Service in front of the webhook (the certificate's DNS names)")
	fs.StringVar(&o.Webhook.ConfigurationName, "webhook-configuration-name", o.Webhook.ConfigurationName, "ValidatingWebhookConfiguration whose caBundle the manager keeps current")
	fs.StringVar(&o.Webhook.MutatingConfigurationName, "webhook-mutating-configuration-name", o.Webhook.MutatingConfigurationName, "MutatingWebhookConfiguration (colocation profiles) whose caBundle the manager keeps current; empty leaves it alone")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	return errors.Join(o.validateServing(), o.validateControllers(), o.validateWebhook())
}

// validateServing checks what the manager itself needs: its namespace, lease, addresses and API client.
func (o *Options) validateServing() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty when --leader-elect is on"))
	}
	if o.LeaderElect {
		errs = append(errs, o.LeaderElection.validate())
	}
	if err := serving.ValidateBindAddresses(
		serving.BindAddress{Flag: "--metrics-bind-address", Addr: o.MetricsAddr},
		serving.BindAddress{Flag: "--health-probe-bind-address", Addr: o.HealthAddr},
		serving.BindAddress{Flag: "--pprof-bind-address", Addr: o.PprofAddr},
	); err != nil {
		errs = append(errs, err)
	}
	if err := o.Serving.Validate(o.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	if o.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--connect-timeout must be positive, got %s", o.ConnectTimeout))
	}
	if o.CacheSyncTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cache-sync-timeout must be positive, got %s", o.CacheSyncTimeout))
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must not be negative, got %s", o.ShutdownTimeout))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.KubeAPIQPS, o.KubeAPIBurst))
	}
	return errors.Join(errs...)
}

// validateControllers checks the controller selection and each controller's options.
func (o *Options) validateControllers() error {
	var errs []error
	if err := validateControllerNames(o.Controllers); err != nil {
		errs = append(errs, err)
	}
	if o.SLOConfigName == "" {
		errs = append(errs, errors.New("--slo-config-name must not be empty"))
	}
	if err := toggle.Validate("--noderesource-plugins", o.NodeResource.Plugins, noderesource.PluginNames()); err != nil {
		errs = append(errs, err)
	}
	if o.NodeResource.Workers <= 0 {
		errs = append(errs, fmt.Errorf("--noderesource-workers must be positive, got %d", o.NodeResource.Workers))
	}
	if o.NodeResource.ExplanationQPS <= 0 {
		errs = append(errs, fmt.Errorf("--noderesource-explanation-qps must be positive, got %v", o.NodeResource.ExplanationQPS))
	}
	return errors.Join(errs...)
}

// validateControllerNames checks --controllers. The SLO config loader used to be a controller named sloconfig that
// could be left out, which left nodeslo, nodemetric and noderesource reading an empty config without a word; it is
// now part of the manager, and naming it gets an error that says so rather than "unknown name".
func validateControllerNames(selection []string) error {
	var errs []error
	known := controllerNames()
	for _, s := range selection {
		if strings.TrimPrefix(s, "-") == sloconfigmap.Name {
			errs = append(errs, fmt.Errorf("--controllers: %q: the SLO config loader (%s) is part of gleaner-manager and always runs, since nodeslo, nodemetric and noderesource read what it loads; it cannot be switched on or off (known controllers: %s)",
				s, sloconfigmap.Name, strings.Join(known, ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return toggle.Validate("--controllers", selection, known)
}

// validateWebhook checks the admission webhook's server and certificate options.
func (o *Options) validateWebhook() error {
	w := o.Webhook
	var errs []error
	if w.Port < 0 || w.Port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port must be 0 (off) or a port, got %d", w.Port))
	}
	if w.Port != 0 && w.CertSecret == "" && w.CertDir == "" {
		errs = append(errs, errors.New("--webhook-cert-dir must name the certificates' directory when --webhook-cert-secret is empty"))
	}
	if w.Port != 0 && w.CertSecret != "" && (w.ServiceName == "" || w.ConfigurationName == "") {
		errs = append(errs, errors.New("--webhook-service-name and --webhook-configuration-name are needed to manage the webhook certificate"))
	}
	return errors.Join(errs...)
}

// validate checks the lease timings as client-go's leader elector would, but at start-up with the flags' names:
// client-go refuses a renew deadline not above 1.2 x the retry period (its jitter), and a lease not longer than the
// renew deadline would let a standby take the lease while the leader still believes it leads.
func (l LeaderElectionOptions) validate() error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--leader-elect-lease-duration", l.LeaseDuration},
		{"--leader-elect-renew-deadline", l.RenewDeadline},
		{"--leader-elect-retry-period", l.RetryPeriod},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.flag, d.v))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if l.RenewDeadline >= l.LeaseDuration {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be below --leader-elect-lease-duration (%s): otherwise a standby can take the lease while the leader still acts on it",
			l.RenewDeadline, l.LeaseDuration))
	}
	if jittered := time.Duration(leaderelection.JitterFactor * float64(l.RetryPeriod)); l.RenewDeadline <= jittered {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period (%s) must be below --leader-elect-renew-deadline (%s) / %.1f: a retry, jittered up to %s, must fit before the deadline",
			l.RetryPeriod, l.RenewDeadline, leaderelection.JitterFactor, jittered))
	}
	return errors.Join(errs...)
}
