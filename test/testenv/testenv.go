// Package testenv runs Gleaner's controller tests against a real kube-apiserver and etcd (controller-runtime's
// envtest) with Gleaner's CRDs installed.
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` sets from hack/kube-build.sh. A package shares one
// API server across its tests:
//
//	var env = testenv.New()
//
//	func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := env.Start(t).Client
//		...
//	}
//
// Start skips the test, with a message saying how to get the binaries, only when KUBEBUILDER_ASSETS is unset; under
// CI (CI=true) a missing control plane fails instead, so CI can never pass by skipping (test/ci).
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/config/crd"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// AssetsVar is the environment variable naming the directory with kube-apiserver, etcd and kubectl.
const AssetsVar = "KUBEBUILDER_ASSETS"

// Env is a lazily started control plane shared by the tests of one package.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Scheme knows the built-in kinds and Gleaner's.
	Scheme *runtime.Scheme
	// Client is an uncached client for the API server.
	Client client.Client
	// Kubeconfig is the path of a kubeconfig file for the API server, for commands such as kubectl.
	Kubeconfig string

	once     sync.Once
	onStop   []func() error
	startErr error
	skip     string
	env      *envtest.Environment
	dir      string
	webhooks []string
	// apiServerArgs change kube-apiserver's flags before it starts.
	apiServerArgs []func(*envtest.Arguments) error
}

// Option configures an Env.
type Option func(*Env)

// WithWebhookManifests installs the webhook configurations in these files or directories (such as
// config/webhook), rewritten by envtest to call a local webhook server with a certificate it generates; Webhook
// says where that server must listen.
func WithWebhookManifests(paths ...string) Option {
	return func(e *Env) { e.webhooks = append(e.webhooks, paths...) }
}

// WithAPIServerArgs lets configure change kube-apiserver's flags (such as --authorization-config) just before the
// control plane starts; an error fails Start.
func WithAPIServerArgs(configure func(*envtest.Arguments) error) Option {
	return func(e *Env) { e.apiServerArgs = append(e.apiServerArgs, configure) }
}

// New returns an Env that starts on its first Start.
func New(opts ...Option) *Env {
	e := &Env{}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Webhook returns where the webhooks installed WithWebhookManifests expect their server: LocalServingHost,
// LocalServingPort and LocalServingCertDir (tls.crt, tls.key), valid after Start.
func (e *Env) Webhook() envtest.WebhookInstallOptions {
	if e.env == nil {
		return envtest.WebhookInstallOptions{}
	}
	return e.env.WebhookInstallOptions
}

// Run runs the package's tests and stops the control plane afterwards; pass its result to os.Exit.
func (e *Env) Run(m *testing.M) int { return Run(m, e) }

// Run runs the package's tests and stops the control planes of envs afterwards, for a package with more than one
// (one with other kube-apiserver flags); pass its result to os.Exit.
func Run(m *testing.M, envs ...*Env) int {
	code := m.Run()
	for _, e := range envs {
		if err := e.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start starts the control plane on first use and returns the Env. It skips t when the binaries are not available
// (and fails it under CI), and fails t when the control plane does not come up.
func (e *Env) Start(t testing.TB) *Env {
	t.Helper()
	e.once.Do(e.start)
	if e.skip != "" {
		ci.Skipf(t, "testenv: %s", e.skip)
	}
	if e.startErr != nil {
		t.Fatalf("testenv: starting kube-apiserver and etcd: %v", e.startErr)
	}
	return e
}

func (e *Env) start() {
	assets := os.Getenv(AssetsVar)
	if assets == "" {
		e.skip = AssetsVar + " is not set; run `make test`, or `export " + AssetsVar + "=$(hack/kube-build.sh envtest)`"
		return
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			e.startErr = fmt.Errorf("%s=%s has no %s: %w", AssetsVar, assets, bin, err)
			return
		}
	}
	crds, err := crd.Objects()
	if err != nil {
		e.startErr = err
		return
	}
	e.Scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, slov1alpha1.AddToScheme, configv1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(e.Scheme); err != nil {
			e.startErr = fmt.Errorf("building the scheme: %w", err)
			return
		}
	}
	if e.dir, err = os.MkdirTemp("", "gleaner-testenv-"); err != nil {
		e.startErr = fmt.Errorf("creating a temporary directory: %w", err)
		return
	}
	// The API server's certificates in a directory of ours rather than one envtest makes and forgets on a stop: a
	// restarted API server (StartAPIServer) then serves the certificate the clients already trust.
	certs := filepath.Join(e.dir, "kube-apiserver")
	if err := os.Mkdir(certs, 0o700); err != nil {
		e.startErr = fmt.Errorf("creating the API server's directory: %w", err)
		return
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                e.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: e.webhooks},
		ControlPlane:          envtest.ControlPlane{APIServer: &envtest.APIServer{CertDir: certs}},
	}
	for _, configure := range e.apiServerArgs {
		if err := configure(e.env.ControlPlane.GetAPIServer().Configure()); err != nil {
			e.startErr = fmt.Errorf("configuring kube-apiserver: %w", err)
			return
		}
	}
	if e.Config, err = e.env.Start(); err != nil {
		e.startErr = err
		return
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		e.startErr = fmt.Errorf("creating a client: %w", err)
		return
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	e.startErr = e.writeKubeconfig(e.Kubeconfig)
}

// OnStop registers f to run before the control plane stops, after the package's tests: the place to stop managers
// a test started, so the API server is not left waiting on their watches.
func (e *Env) OnStop(f func()) { e.StopWith(func() error { f(); return nil }) }

// StopWith is OnStop for a stop that can fail: an error stop returns fails the package's run (Run says what it was).
func (e *Env) StopWith(stop func() error) { e.onStop = append(e.onStop, stop) }

func (e *Env) stop() error {
	var errs []error
	for i := len(e.onStop) - 1; i >= 0; i-- {
		errs = append(errs, e.onStop[i]())
	}
	if e.dir != "" {
		defer func() { _ = os.RemoveAll(e.dir) }()
	}
	if e.env != nil && e.Config != nil {
		errs = append(errs, e.env.Stop())
	}
	return errors.Join(errs...)
}

// StopAPIServer stops kube-apiserver and leaves etcd, and everything stored in it, running: an API-server outage.
// StartAPIServer ends it. The package's other tests share the API server, so a test that stops it starts it again
// before it returns, failed or not (t.Cleanup).
func (e *Env) StopAPIServer() error {
	s := e.env.ControlPlane.GetAPIServer()
	// kube-apiserver drains its watches on SIGTERM, which can take longer than the stop timeout; envtest then kills
	// it and says so. Either way it is stopped once nothing listens on its port.
	s.StopTimeout = 5 * time.Second
	err := s.Stop()
	addr := net.JoinHostPort(s.Address, s.Port)
	if c, derr := net.DialTimeout("tcp", addr, time.Second); derr == nil {
		_ = c.Close()
		return fmt.Errorf("stopping kube-apiserver: it still listens on %s: %w", addr, err)
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same etcd, address and certificates, so
// that clients made before the outage work again; it returns once the API server answers its health check.
func (e *Env) StartAPIServer() error {
	s := e.env.ControlPlane.GetAPIServer()
	before := s.Port
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	if s.Port != before {
		return fmt.Errorf("kube-apiserver came back on port %s, not %s: clients made before would not reach it", s.Port, before)
	}
	return nil
}

// Kubectl returns a command running the kubectl next to kube-apiserver (the same version, so its output is the
// reference for allocation numbers) against this API server.
func (e *Env) Kubectl(args ...string) *exec.Cmd {
	bin := filepath.Join(os.Getenv(AssetsVar), "kubectl")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	// kubectl keeps its discovery cache in KUBECACHEDIR, else ~/.kube/cache: the environment's own directory keeps
	// the user's home as it was.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(e.dir, "kubectl-cache"))
	return cmd
}

// UserConfig returns a client configuration that authenticates as the user name in groups (by client
// certificate), for tests of RBAC. A service account's user name is system:serviceaccount:<namespace>:<name>, and
// RBAC bindings to the service account apply to it.
func (e *Env) UserConfig(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %q: %w", name, err)
	}
	return u.Config(), nil
}

// writeKubeconfig writes a kubeconfig for a cluster-admin user of the running API server.
func (e *Env) writeKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "gleaner-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a kubeconfig user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
