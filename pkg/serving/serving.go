package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Options configure how the metrics and webhook servers are served.
type Options struct {
	// SecureMetrics serves /metrics (and whatever else the metrics server serves) over HTTPS, to clients the API
	// server authenticates (TokenReview) and authorizes for get on the path (SubjectAccessReview). False serves
	// plain HTTP to anyone, which Validate allows only on a loopback address.
	SecureMetrics bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key, re-read when they change. Empty, or without
	// both files, the server makes a self-signed certificate at start, as kube-controller-manager does: scrapers
	// then skip verification, and authentication still holds.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook servers speak HTTP/2. Off, they offer only HTTP/1.1 in TLS's ALPN:
	// HTTP/2's stream handling was the way in for the rapid-reset and stream-flood attacks (CVE-2023-44487,
	// CVE-2023-39325), and neither server gains anything from it.
	EnableHTTP2 bool
}

// DefaultOptions returns HTTPS with authentication and authorization, a self-signed certificate and no HTTP/2.
func DefaultOptions() Options { return Options{SecureMetrics: true} }

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "serve the metrics endpoint over HTTPS to clients the API server authenticates and authorizes (get on the path as a nonResourceURL); false serves plain HTTP, allowed only on a loopback --metrics-bind-address")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "directory with the metrics server's tls.crt and tls.key (re-read when they change); empty: a self-signed certificate made at start")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "let the metrics and webhook servers speak HTTP/2 (off: HTTP/1.1 only, against HTTP/2 rapid-reset and stream-flood attacks)")
}

// Validate checks the options against the metrics address they serve ("0": no metrics server). An address that
// does not parse is the caller's to report, with its other addresses.
func (o Options) Validate(metricsAddr string) error {
	if o.SecureMetrics || metricsAddr == "0" {
		return nil
	}
	if host, _, err := net.SplitHostPort(metricsAddr); err == nil && !IsLoopback(host) {
		return fmt.Errorf("--metrics-secure=false serves the metrics endpoint to anyone who can connect: bind it to a loopback address such as 127.0.0.1:PORT, or keep --metrics-secure (got --metrics-bind-address %q)", metricsAddr)
	}
	return nil
}

// BindAddress is a listen flag of a binary and its value: "0" turns that server off, anything else must be
// host:port (the host may be empty: every interface).
type BindAddress struct{ Flag, Addr string }

// ValidateBindAddresses reports every address that is neither "0" nor host:port, naming its flag.
func ValidateBindAddresses(addrs ...BindAddress) error {
	var errs []error
	for _, a := range addrs {
		if a.Addr == "0" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.Addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.Flag, a.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// IsLoopback reports whether host names only the machine itself: localhost or a loopback IP. The empty host
// (every interface) is not.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TLSOpts returns the changes to a server's TLS configuration that the options ask for, for controller-runtime's
// metrics and webhook servers and for Listener.
func (o Options) TLSOpts() []func(*tls.Config) {
	if o.EnableHTTP2 {
		return nil
	}
	return []func(*tls.Config){withoutHTTP2}
}

// withoutHTTP2 offers only HTTP/1.1 in ALPN; Go's server then never speaks HTTP/2 on the connection.
func withoutHTTP2(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// Listener listens on addr for the metrics server: TLS with the certificate of MetricsCertDir (re-read while ctx
// lasts) or a self-signed one when SecureMetrics, plain TCP otherwise. An address in use is an error.
func (o Options) Listener(ctx context.Context, log logr.Logger, addr string) (net.Listener, error) {
	if !o.SecureMetrics {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
		return l, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	for _, opt := range o.TLSOpts() {
		opt(cfg)
	}
	if err := o.certificate(ctx, log, cfg); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return tls.NewListener(l, cfg), nil
}

// certificate sets cfg's certificate: MetricsCertDir's files, watched, when both exist; else a self-signed one.
func (o Options) certificate(ctx context.Context, log logr.Logger, cfg *tls.Config) error {
	if o.MetricsCertDir != "" {
		cert, key := filepath.Join(o.MetricsCertDir, "tls.crt"), filepath.Join(o.MetricsCertDir, "tls.key")
		_, certErr := os.Stat(cert)
		_, keyErr := os.Stat(key)
		if certErr == nil && keyErr == nil {
			w, err := certwatcher.New(cert, key)
			if err != nil {
				return fmt.Errorf("loading the metrics certificate from %s: %w", o.MetricsCertDir, err)
			}
			go func() {
				if err := w.Start(ctx); err != nil {
					log.Error(err, "watching the metrics certificate", "dir", o.MetricsCertDir)
				}
			}()
			cfg.GetCertificate = w.GetCertificate
			return nil
		}
		log.Info("no tls.crt and tls.key in --metrics-cert-dir; serving a self-signed certificate", "dir", o.MetricsCertDir)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return fmt.Errorf("making a self-signed certificate for the metrics server: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("loading the self-signed metrics certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return nil
}
