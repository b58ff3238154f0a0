package webhookcert

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// +kubebuilder:rbac:groups="",namespace=gleaner-system,resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;update,resourceNames=gleaner-validating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch;update,resourceNames=gleaner-mutating-webhook-configuration

// Keys of the certificate Secret.
const (
	// KeyCert is the serving certificate (PEM); also the file name the webhook server reads.
	KeyCert = corev1.TLSCertKey
	// KeyKey is its private key (PEM); also the file name the webhook server reads.
	KeyKey = corev1.TLSPrivateKeyKey
	// KeyCABundle holds the CA certificates the API server must trust (PEM): the current CA, followed by the
	// previous one until it expires, so replicas that still serve the previous certificate are trusted while they
	// pick up a renewal.
	KeyCABundle = "ca-bundle.crt"
)

const (
	// validity is how long a generated CA and serving certificate are valid.
	validity = 365 * 24 * time.Hour
	// renewBefore is how long before expiry the certificate is replaced.
	renewBefore = 30 * 24 * time.Hour
	// interval is how often Start runs Ensure again, whether or not a webhook configuration changed: the
	// certificate's renewal comes from this.
	interval = time.Hour
	// Ensure's retries after an error wait from retryMin, doubling, up to retryMax.
	retryMin, retryMax = time.Second, 5 * time.Minute
)

// Reasons of the repairs metric: what a webhook configuration held when it was found without the current bundle.
const (
	// ReasonMissing is a webhook without any caBundle (the configuration was created or replaced without one): the
	// API server could not call it, so admission went on without it where it fails open and refused where it
	// fails closed.
	ReasonMissing = "missing"
	// ReasonOutdated is a webhook with a caBundle other than the current one: the certificate was renewed, or
	// someone else wrote the bundle.
	ReasonOutdated = "outdated"
)

// Options name what the Provisioner manages.
type Options struct {
	// Namespace holds the Secret and the webhook Service.
	Namespace string
	// SecretName is the Secret that keeps the certificate, shared by every replica.
	SecretName string
	// ServiceName is the webhook Service; the certificate is issued for its DNS names.
	ServiceName string
	// ConfigurationName is the ValidatingWebhookConfiguration whose caBundle is kept current.
	ConfigurationName string
	// MutatingConfigurationName is the MutatingWebhookConfiguration whose caBundle is kept current; empty: none.
	MutatingConfigurationName string
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
}

// Provisioner gives gleaner-manager's webhooks a working certificate without cert-manager: it generates (with
// crypto/x509, on the injected clock) a self-signed CA and a serving certificate for the Service's DNS names,
// keeps them in a Secret shared by every replica (the first replica creates it; the others use it), writes them
// into the webhook server's directory, and puts the CA into the caBundle of the ValidatingWebhookConfiguration and
// of the MutatingWebhookConfiguration. It renews the certificate 30 days before it expires. It runs on every
// replica, leader or not, since every replica serves the webhooks; every step is idempotent and replicas converge
// on the Secret's content.
type Provisioner struct {
	client  client.WithWatch
	clock   clock.WithTicker
	opts    Options
	repairs *prometheus.CounterVec
}

var (
	_ manager.Runnable               = &Provisioner{}
	_ manager.LeaderElectionRunnable = &Provisioner{}
)

// New returns a Provisioner whose metric is registered in reg. c must read from the API server directly (not from a
// cache): Ensure runs before the manager starts; Start watches the webhook configurations through it.
func New(c client.WithWatch, clk clock.WithTicker, reg prometheus.Registerer, opts Options) (*Provisioner, error) {
	p := &Provisioner{client: c, clock: clk, opts: opts}
	p.repairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gleaner_webhook_cabundle_repairs_total",
		Help: "Times the manager found a webhook configuration without the current CA bundle and set it, by what it found: " +
			"missing (a webhook had none, so the API server could not call it: admission went on without it where it fails open, " +
			"and refused where it fails closed), outdated (another bundle: a certificate renewal, or someone else's bundle).",
	}, []string{"configuration", "reason"})
	if err := reg.Register(p.repairs); err != nil {
		return nil, fmt.Errorf("registering the webhook certificate metrics: %w", err)
	}
	for _, name := range p.configurationNames() {
		for _, reason := range []string{ReasonMissing, ReasonOutdated} {
			p.repairs.WithLabelValues(name, reason)
		}
	}
	return p, nil
}

// configurationNames are the webhook configurations whose caBundle p keeps.
func (p *Provisioner) configurationNames() []string {
	if p.opts.MutatingConfigurationName == "" {
		return []string{p.opts.ConfigurationName}
	}
	return []string{p.opts.ConfigurationName, p.opts.MutatingConfigurationName}
}

// NeedLeaderElection is false: every replica serves the webhook and needs the certificate.
func (p *Provisioner) NeedLeaderElection() bool { return false }

// ensureKey is the one item of Start's queue: every trigger asks for the same Ensure.
const ensureKey = "ensure"

// Start runs Ensure until ctx ends: whenever either webhook configuration is created or changed (a configuration
// applied again without its caBundle gets it back within moments, not at the next hourly run), and every hour, so
// that a renewal or a Secret updated by another replica is picked up. It watches only the two configurations, by
// name. Errors are logged and Ensure retried, from a second up to every five minutes.
func (p *Provisioner) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("webhookcert"))
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryMin, retryMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: p.clock})
	trigger := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { queue.Add(ensureKey) },
		UpdateFunc: func(any, any) { queue.Add(ensureKey) },
	}
	informers := []toolscache.Controller{p.informer(&admissionregistrationv1.ValidatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, p.opts.ConfigurationName, trigger)}
	if p.opts.MutatingConfigurationName != "" {
		informers = append(informers, p.informer(&admissionregistrationv1.MutatingWebhookConfigurationList{},
			&admissionregistrationv1.MutatingWebhookConfiguration{}, p.opts.MutatingConfigurationName, trigger))
	}
	var wg sync.WaitGroup
	for _, inf := range informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	wg.Go(func() {
		defer queue.ShutDown()
		t := p.clock.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				queue.Add(ensureKey)
			}
		}
	})
	for p.ensureNext(ctx, queue) {
	}
	wg.Wait()
	return nil
}

// ensureNext runs Ensure for the next item of queue; false once the queue is shut down.
func (p *Provisioner) ensureNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := p.Ensure(ctx); err != nil {
		if ctx.Err() == nil { // not the shutdown's
			log.FromContext(ctx).Error(err, "keeping the webhook certificate current; retrying", "retries", queue.NumRequeues(key))
			queue.AddRateLimited(key)
		}
		return true
	}
	queue.Forget(key)
	return true
}

// informer watches the one object called name of list's kind, and calls h for it.
func (p *Provisioner) informer(list client.ObjectList, obj runtime.Object, name string, h toolscache.ResourceEventHandler) toolscache.Controller {
	// RBAC grants list and watch for the one name only when the request selects that name.
	byName := fields.OneTermEqualSelector("metadata.name", name)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, _ := list.DeepCopyObject().(client.ObjectList)
			return l, p.client.List(ctx, l, &client.ListOptions{FieldSelector: byName, Raw: &o})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			l, _ := list.DeepCopyObject().(client.ObjectList)
			return p.client.Watch(ctx, l, &client.ListOptions{FieldSelector: byName, Raw: &o})
		},
	}
	_, c := toolscache.NewInformerWithOptions(toolscache.InformerOptions{ListerWatcher: lw, ObjectType: obj, Handler: h})
	return c
}

// Ensure makes the Secret hold a certificate valid for more than 30 days for the Service's names, writes it into
// CertDir, and sets the caBundle of the webhook configurations. A missing webhook configuration (the webhook
// manifests are not installed) is not an error: there is nothing to patch yet.
func (p *Provisioner) Ensure(ctx context.Context) error {
	secret, err := p.secret(ctx)
	if err != nil {
		return err
	}
	if err := p.writeFiles(secret); err != nil {
		return err
	}
	bundle := secret.Data[KeyCABundle]
	if err := p.patchCABundle(ctx, &validating{}, p.opts.ConfigurationName, bundle); err != nil {
		return err
	}
	if p.opts.MutatingConfigurationName == "" {
		return nil
	}
	return p.patchCABundle(ctx, &mutating{}, p.opts.MutatingConfigurationName, bundle)
}

// secret returns the certificate Secret, creating or renewing it as needed.
func (p *Provisioner) secret(ctx context.Context) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: p.opts.Namespace, Name: p.opts.SecretName}
	for attempt := 0; ; attempt++ {
		secret := &corev1.Secret{}
		err := p.client.Get(ctx, key, secret)
		switch {
		case apierrors.IsNotFound(err):
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS}
			if secret.Data, err = p.generate(nil); err != nil {
				return nil, err
			}
			err = p.client.Create(ctx, secret)
			if err == nil {
				log.FromContext(ctx).Info("generated the webhook certificate", "secret", key)
				return secret, nil
			}
		case err != nil:
			return nil, fmt.Errorf("reading webhook certificate secret %s: %w", key, err)
		default:
			reason := p.renewalReason(secret.Data)
			if reason == "" {
				return secret, nil
			}
			if secret.Data, err = p.generate(secret.Data); err != nil {
				return nil, err
			}
			err = p.client.Update(ctx, secret)
			if err == nil {
				log.FromContext(ctx).Info("renewed the webhook certificate", "secret", key, "reason", reason)
				return secret, nil
			}
		}
		// Another replica created or renewed it at the same moment: use theirs.
		if (apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) && attempt < 3 {
			continue
		}
		return nil, fmt.Errorf("storing webhook certificate secret %s: %w", key, err)
	}
}

// dnsNames are the names the API server may use for the Service.
func (p *Provisioner) dnsNames() []string {
	svc, ns := p.opts.ServiceName, p.opts.Namespace
	return []string{svc + "." + ns + ".svc", svc, svc + "." + ns, svc + "." + ns + ".svc.cluster.local"}
}

// renewalReason says why the certificate in data must be replaced; "" when it is good.
func (p *Provisioner) renewalReason(data map[string][]byte) string {
	pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return "no valid certificate and key: " + err.Error()
	}
	if len(data[KeyCABundle]) == 0 {
		return "no CA bundle"
	}
	leaf := pair.Leaf
	if left := leaf.NotAfter.Sub(p.clock.Now()); left < renewBefore {
		return fmt.Sprintf("expires at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, name := range p.dnsNames() {
		if err := leaf.VerifyHostname(name); err != nil {
			return "not valid for " + name
		}
	}
	return ""
}

// generate returns new Secret data: a new CA and serving certificate, with the previous CA (from old, while still
// valid) kept in the bundle.
func (p *Provisioner) generate(old map[string][]byte) (map[string][]byte, error) {
	ca, caKey, err := p.newCA()
	if err != nil {
		return nil, err
	}
	certDER, keyPEM, err := p.newServingCert(ca, caKey)
	if err != nil {
		return nil, err
	}
	bundle := pemCert(ca.Raw)
	if prevCA := p.currentCA(old); prevCA != nil {
		bundle = append(bundle, pemCert(prevCA.Raw)...)
	}
	return map[string][]byte{KeyCert: pemCert(certDER), KeyKey: keyPEM, KeyCABundle: bundle}, nil
}

// newCA makes a self-signed CA valid from now (on the injected clock, less a minute for clock skew).
func (p *Provisioner) newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the webhook CA key: %w", err)
	}
	now := p.clock.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("gleaner-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the webhook CA back: %w", err)
	}
	return ca, key, nil
}

// newServingCert makes the serving certificate for the Service's DNS names, signed by ca.
func (p *Provisioner) newServingCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the webhook serving key: %w", err)
	}
	names := p.dnsNames()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the webhook serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the webhook serving key: %w", err)
	}
	return der, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("webhookcert: reading random bytes: %v", err))
	}
	return n
}

// currentCA returns the first CA of old's bundle while it is still valid.
func (p *Provisioner) currentCA(old map[string][]byte) *x509.Certificate {
	certs, err := certutil.ParseCertsPEM(old[KeyCABundle])
	if err != nil || len(certs) == 0 || !certs[0].NotAfter.After(p.clock.Now()) {
		return nil
	}
	return certs[0]
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
}

// writeFiles writes the certificate and key for the webhook server, only when they changed. Each file is replaced
// atomically; the server's certificate watcher reloads them.
func (p *Provisioner) writeFiles(secret *corev1.Secret) error {
	if err := os.MkdirAll(p.opts.CertDir, 0o700); err != nil {
		return fmt.Errorf("creating webhook certificate directory: %w", err)
	}
	// The key first: the watcher reloads on the certificate, and a new certificate with the old key would not load.
	for _, name := range []string{KeyKey, KeyCert} {
		path := filepath.Join(p.opts.CertDir, name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, secret.Data[name]) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, secret.Data[name], 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("replacing %s: %w", path, err)
		}
	}
	return nil
}

// webhookConfiguration is a Validating- or MutatingWebhookConfiguration: the object and its webhooks' client
// configurations.
type webhookConfiguration interface {
	object() client.Object
	clientConfigs() []*admissionregistrationv1.WebhookClientConfig
}

type validating struct {
	admissionregistrationv1.ValidatingWebhookConfiguration
}

func (v *validating) object() client.Object { return &v.ValidatingWebhookConfiguration }
func (v *validating) clientConfigs() []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(v.Webhooks))
	for i := range v.Webhooks {
		out[i] = &v.Webhooks[i].ClientConfig
	}
	return out
}

type mutating struct {
	admissionregistrationv1.MutatingWebhookConfiguration
}

func (m *mutating) object() client.Object { return &m.MutatingWebhookConfiguration }
func (m *mutating) clientConfigs() []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(m.Webhooks))
	for i := range m.Webhooks {
		out[i] = &m.Webhooks[i].ClientConfig
	}
	return out
}

// patchCABundle sets caBundle on every webhook of the configuration named name (of wc's kind).
func (p *Provisioner) patchCABundle(ctx context.Context, wc webhookConfiguration, name string, bundle []byte) error {
	obj := wc.object()
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	for attempt := 0; ; attempt++ {
		err := p.client.Get(ctx, types.NamespacedName{Name: name}, obj)
		if apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("no webhook configuration to give the CA to", "kind", kind, "name", name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", kind, name, err)
		}
		found := ""
		for _, cc := range wc.clientConfigs() {
			switch {
			case bytes.Equal(cc.CABundle, bundle):
				continue
			case len(cc.CABundle) == 0:
				found = ReasonMissing
			case found == "":
				found = ReasonOutdated
			}
			cc.CABundle = slices.Clone(bundle)
		}
		if found == "" {
			return nil
		}
		err = p.client.Update(ctx, obj)
		if err == nil {
			p.repairs.WithLabelValues(name, found).Inc()
			log.FromContext(ctx).Info("set the webhook CA bundle", "kind", kind, "configuration", name, "found", found,
				"created", obj.GetCreationTimestamp().UTC().Format(time.RFC3339))
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("setting the caBundle of %s %s: %w", kind, name, err)
		}
	}
}
