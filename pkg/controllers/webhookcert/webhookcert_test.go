package webhookcert_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"
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
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(b, vwc); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), vwc) })
}

func provisioner(t *testing.T, e *testenv.Env, clk *clocktesting.FakeClock, dir string) *webhookcert.Provisioner {
	t.Helper()
	return webhookcert.New(e.Client, clk, webhookcert.Options{
		Namespace: namespace, SecretName: "gleaner-webhook-cert", ServiceName: serviceName,
		ConfigurationName: vwcName, CertDir: dir,
	})
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
	p := webhookcert.New(e.Client, clocktesting.NewFakeClock(time.Now()), webhookcert.Options{
		Namespace: "no-such-namespace", SecretName: "gleaner-webhook-cert", ServiceName: serviceName,
		ConfigurationName: vwcName, CertDir: t.TempDir(),
	})
	err := p.Ensure(context.Background())
	if err == nil || !apierrors.IsNotFound(err) {
		t.Fatalf("want the namespace-not-found error, wrapped, got %v", err)
	}
}
