package webhookcert_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/controllers/webhookcert"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const (
	namespace   = "gleaner-system"
	serviceName = "gleaner-webhook-service"
	vwcName     = "gleaner-validating-webhook-configuration"
)

// installShippedWebhookConfiguration creates config/webhook/manifests.yaml as shipped: with a Service reference and
// no caBundle, the way `kubectl apply -k config/default` leaves it.
func installShippedWebhookConfiguration(t *testing.T, e *testenv.Env) {
	t.Helper()
	install(t, e, "manifests.yaml", &admissionregistrationv1.ValidatingWebhookConfiguration{})
}

// installShippedMutatingConfiguration does the same for config/webhook/colocationprofile.yaml.
func installShippedMutatingConfiguration(t *testing.T, e *testenv.Env) {
	t.Helper()
	install(t, e, "colocationprofile.yaml", &admissionregistrationv1.MutatingWebhookConfiguration{})
}

// install creates the object of config/webhook's file as an administrator, deleted when the test ends.
func install(t *testing.T, e *testenv.Env, file string, obj client.Object) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "webhook", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, obj); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), obj) })
}

// newProvisioner is webhookcert.New with a registry of its own, failing the test on an error.
func newProvisioner(t *testing.T, c client.WithWatch, clk clock.WithTicker, opts webhookcert.Options) (*webhookcert.Provisioner, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := webhookcert.New(c, clk, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, reg
}

// adminWatchClient is an administrator's client that can watch, as the Provisioner needs.
func adminWatchClient(t *testing.T, e *testenv.Env) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func provisioner(t *testing.T, e *testenv.Env, clk *clocktesting.FakeClock, dir string) *webhookcert.Provisioner {
	t.Helper()
	p, _ := newProvisioner(t, adminWatchClient(t, e), clk, webhookcert.Options{
		Namespace: namespace, SecretName: "gleaner-webhook-cert", ServiceName: serviceName,
		ConfigurationName: vwcName, CertDir: dir,
	})
	return p
}

// handshake serves TLS from the files in dir and connects to it as the API server would: trusting only caBundle,
// for the Service's DNS name, at the time clk says.
func handshake(t *testing.T, clk *clocktesting.FakeClock, dir string, caBundle []byte) error {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		if c, err := l.Accept(); err == nil {
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatal("the caBundle holds no certificate")
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(),
		&tls.Config{RootCAs: pool, ServerName: serviceName + "." + namespace + ".svc", MinVersion: tls.VersionTLS12, Time: clk.Now})
	if err != nil {
		return err
	}
	return c.Close()
}

func caBundle(t *testing.T, e *testenv.Env) []byte {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.Client.Get(context.Background(), types.NamespacedName{Name: vwcName}, vwc); err != nil {
		t.Fatal(err)
	}
	return vwc.Webhooks[0].ClientConfig.CABundle
}

func TestProvisionerGivesAWorkingCertificateAndRenewsIt(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	dirA, dirB := t.TempDir(), t.TempDir()

	// Without the webhook configuration installed: the certificate is made, nothing to patch, no error.
	a := provisioner(t, e, clk, dirA)
	if err := a.Ensure(ctx); err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	installShippedWebhookConfiguration(t, e)
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	bundle := caBundle(t, e)
	if err := handshake(t, clk, dirA, bundle); err != nil {
		t.Fatalf("the API server could not trust the served certificate: %v", err)
	}

	// A second replica uses the same certificate.
	b := provisioner(t, e, clk, dirB)
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	certA, _ := os.ReadFile(filepath.Join(dirA, "tls.crt"))
	certB, _ := os.ReadFile(filepath.Join(dirB, "tls.crt"))
	if !bytes.Equal(certA, certB) {
		t.Error("two replicas serve different certificates")
	}
	if !bytes.Equal(bundle, caBundle(t, e)) {
		t.Error("the second replica changed the caBundle")
	}

	// 340 days later the certificate has less than 30 days left: renewed, and the bundle trusts both CAs while
	// replica b still serves the old certificate.
	clk.Step(340 * 24 * time.Hour)
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	renewed := caBundle(t, e)
	if certs, err := certutil.ParseCertsPEM(renewed); err != nil || len(certs) != 2 {
		t.Fatalf("after renewal the bundle has %d CAs (%v), want the new and the previous", len(certs), err)
	}
	newCert, _ := os.ReadFile(filepath.Join(dirA, "tls.crt"))
	if bytes.Equal(newCert, certA) {
		t.Fatal("the certificate was not renewed")
	}
	if err := handshake(t, clk, dirA, renewed); err != nil {
		t.Errorf("renewed certificate not trusted: %v", err)
	}
	if err := handshake(t, clk, dirB, renewed); err != nil {
		t.Errorf("the not yet updated replica is not trusted during the renewal: %v", err)
	}
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	certB, _ = os.ReadFile(filepath.Join(dirB, "tls.crt"))
	if !bytes.Equal(certB, newCert) {
		t.Error("replica b did not pick up the renewed certificate")
	}

	// A webhook configuration applied again loses nothing: kubectl apply of the manifest does not carry a caBundle,
	// and a recreated one gets it back at the next Ensure.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: vwcName}}
	if err := e.Client.Delete(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	installShippedWebhookConfiguration(t, e)
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caBundle(t, e), renewed) {
		t.Error("a recreated webhook configuration did not get the caBundle back")
	}
}

func TestProvisionerReportsAPIErrors(t *testing.T) {
	e := env.Start(t)
	p, _ := newProvisioner(t, adminWatchClient(t, e), clocktesting.NewFakeClock(time.Now()), webhookcert.Options{
		Namespace: "no-such-namespace", SecretName: "gleaner-webhook-cert", ServiceName: serviceName,
		ConfigurationName: vwcName, CertDir: t.TempDir(),
	})
	err := p.Ensure(context.Background())
	if err == nil || !apierrors.IsNotFound(err) {
		t.Fatalf("want the namespace-not-found error, wrapped, got %v", err)
	}
}

// TestProvisionerRestoresAConfigurationAppliedAgain: a webhook configuration deleted and applied again from the
// manifests (which carry no caBundle) gets the caBundle back from the running provisioner within moments, not at
// its hourly run, and so does one whose caBundle someone replaced; each repair is counted by what was found. It
// runs as the manager's service account with the RBAC of config/rbac and config/policy installed: the watch needs
// list and watch on the two configurations by name, and the policy must still let the caBundle through.
func TestProvisionerRestoresAConfigurationAppliedAgain(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	installShippedWebhookConfiguration(t, e)
	installShippedMutatingConfiguration(t, e)
	manager := asManager(t, e)
	kubectl(t, e, "apply", "-k", policyDir)
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-k", policyDir).Run() })

	const secret = "gleaner-webhook-cert-restore-test"
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secret}})
	})
	p, reg := newProvisioner(t, manager, clock.RealClock{}, webhookcert.Options{
		Namespace: namespace, SecretName: secret, ServiceName: serviceName,
		ConfigurationName: vwcName, MutatingConfigurationName: mwcName, CertDir: t.TempDir(),
	})
	if err := p.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	bundle := caBundle(t, e)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	configurations := []struct {
		name    string
		obj     func() client.Object
		install func(*testing.T, *testenv.Env)
	}{
		{vwcName, func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }, installShippedWebhookConfiguration},
		{mwcName, func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }, installShippedMutatingConfiguration},
	}
	for _, c := range configurations {
		holdsBundle := func(want []byte) func() error {
			return func() error {
				obj := c.obj()
				if err := e.Client.Get(ctx, types.NamespacedName{Name: c.name}, obj); err != nil {
					return err
				}
				for i, got := range webhookCABundles(obj) {
					if !bytes.Equal(got, want) {
						return fmt.Errorf("webhook %d of %s has a caBundle of %d bytes, not the current one", i, c.name, len(got))
					}
				}
				return nil
			}
		}
		if err := holdsBundle(bundle)(); err != nil {
			t.Fatalf("after Ensure: %v", err)
		}
		missing := repairs(t, reg, c.name, webhookcert.ReasonMissing)

		// Deleted and applied again, as `kubectl delete` and `kubectl apply -k config/default` leave it.
		obj := c.obj()
		obj.SetName(c.name)
		if err := e.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
		c.install(t, e)
		applied := time.Now()
		testenv.Eventually(t, c.name+" applied again gets the caBundle back", holdsBundle(bundle))
		t.Logf("%s applied again without a caBundle: restored after %v", c.name, time.Since(applied).Round(time.Millisecond))
		testenv.Eventually(t, "the repair of "+c.name+" counted as missing", func() error {
			if got := repairs(t, reg, c.name, webhookcert.ReasonMissing); got != missing+1 {
				return fmt.Errorf("%s repairs of %s found missing, want %v", strconv.FormatFloat(got, 'f', -1, 64), c.name, missing+1)
			}
			return nil
		})
	}

	// Someone else's CA written over the validating configuration's: the current bundle is back, counted as
	// outdated.
	other, _, err := certutil.GenerateSelfSignedCertKey("someone-else", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: vwcName}, vwc); err != nil {
		t.Fatal(err)
	}
	vwc.Webhooks[0].ClientConfig.CABundle = other
	if err := e.Client.Update(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the current caBundle written back over another", func() error {
		if got := caBundle(t, e); !bytes.Equal(got, bundle) {
			return errors.New("the validating configuration still holds another caBundle")
		}
		if got := repairs(t, reg, vwcName, webhookcert.ReasonOutdated); got != 1 {
			return fmt.Errorf("%v repairs found outdated, want 1", got)
		}
		return nil
	})
}

// webhookCABundles are the caBundles of a Validating- or MutatingWebhookConfiguration's webhooks.
func webhookCABundles(obj client.Object) [][]byte {
	var out [][]byte
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	return out
}

// repairs is the value of gleaner_webhook_cabundle_repairs_total for a configuration and reason.
func repairs(t *testing.T, g prometheus.Gatherer, configuration, reason string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gleaner_webhook_cabundle_repairs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["configuration"] == configuration && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no gleaner_webhook_cabundle_repairs_total{configuration=%q, reason=%q}", configuration, reason)
	return 0
}
