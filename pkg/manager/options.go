package manager

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

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
	// MetricsAddr is where Prometheus metrics are served; "0" turns them off.
	MetricsAddr string
	// HealthAddr is where /healthz and /readyz are served; "0" turns them off.
	HealthAddr string
	// ConnectTimeout bounds the first contact with the API server.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds how long running reconciles may take to finish after a stop signal.
	ShutdownTimeout time.Duration
	// Controllers selects the controllers to run: "*" for all, a name to add one, "-name" to leave one out.
	Controllers []string
	// KubeAPIQPS and KubeAPIBurst limit the manager's requests to the API server (client-side token bucket).
	KubeAPIQPS   float32
	KubeAPIBurst int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Namespace:        "gleaner-system",
		LeaderElect:      true,
		LeaderElectionID: "gleaner-manager.slo.gleaner.sh",
		MetricsAddr:      ":8080",
		HealthAddr:       ":8081",
		ConnectTimeout:   10 * time.Second,
		ShutdownTimeout:  30 * time.Second,
		Controllers:      []string{"*"},
		KubeAPIQPS:       30,
		KubeAPIBurst:     60,
	}
}

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config, then in-cluster")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the manager's own objects (leader lease, slo-controller-config)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "run only while holding the leader lease, so one replica acts at a time")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the leader lease")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus /metrics endpoint; 0 disables it")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of /healthz and /readyz; 0 disables them")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", o.ConnectTimeout, "how long to wait for the API server at start-up")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, "controllers to run: '*' for all, 'name' to add one, '-name' to leave one out")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second to the API server, sustained")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests to the API server allowed in a burst above --kube-api-qps")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long running work may take to finish after a stop signal")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty when --leader-elect is on"))
	}
	for _, a := range []struct{ flag, addr string }{
		{"--metrics-bind-address", o.MetricsAddr},
		{"--health-probe-bind-address", o.HealthAddr},
	} {
		if a.addr == "0" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.flag, a.addr, err))
		}
	}
	if err := toggle.Validate("--controllers", o.Controllers, controllerNames()); err != nil {
		errs = append(errs, err)
	}
	if o.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--connect-timeout must be positive, got %s", o.ConnectTimeout))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.KubeAPIQPS, o.KubeAPIBurst))
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must not be negative, got %s", o.ShutdownTimeout))
	}
	return errors.Join(errs...)
}
