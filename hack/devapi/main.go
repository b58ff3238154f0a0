// Command devapi runs a bare control plane (kube-apiserver and etcd, no nodes) with Gleaner's CRDs installed and the
// manager's namespace created, writes a kubeconfig for it, and keeps it up until interrupted. `make run-bare` uses it
// when no full local cluster is wanted; the binaries come from hack/kube-build.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gleaner-sh/gleaner/config/crd"
)

func main() {
	// controller-runtime registers its own -kubeconfig on the global flag set, so use a private one.
	fs := flag.NewFlagSet("devapi", flag.ExitOnError)
	assets := fs.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver and etcd")
	kubeconfig := fs.String("kubeconfig", "", "where to write the kubeconfig (required)")
	namespace := fs.String("namespace", "gleaner-system", "namespace to create for gleaner-manager")
	interruptStops := fs.Bool("interrupt-stops", true, "stop on SIGINT as on SIGTERM; false: SIGINT is caught and "+
		"ignored, so that a Ctrl-C meant for a program beside this one (run.sh's gleaner-manager) leaves the control "+
		"plane up until that program has stopped, and SIGTERM stops it")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag.
	if err := run(*assets, *kubeconfig, *namespace, *interruptStops); err != nil {
		fmt.Fprintf(os.Stderr, "devapi: %v\n", err)
		os.Exit(1)
	}
}

func run(assets, kubeconfig, namespace string, interruptStops bool) error {
	if assets == "" || kubeconfig == "" {
		return fmt.Errorf("--assets (or KUBEBUILDER_ASSETS) and --kubeconfig are required")
	}
	// Signals are caught before anything starts and stay caught until everything has stopped: a second Ctrl-C, or
	// run.sh's SIGTERM while the first one is being handled, must not kill this process between stopping
	// kube-apiserver and stopping etcd (etcd runs in its own process group, so it would be left running with its
	// data). The deferred stop() therefore runs after env.Stop.
	stopSignals := []os.Signal{syscall.SIGTERM}
	if interruptStops {
		stopSignals = append(stopSignals, os.Interrupt)
	} else {
		// Caught, not ignored: an ignored signal would stay ignored in kube-apiserver and etcd across their exec.
		signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	crds, err := crd.Objects()
	if err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devapi: stopping kube-apiserver and etcd: %v\n", err)
			return
		}
		fmt.Println("devapi: stopped; etcd's data removed")
	}()

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	user, err := env.AddUser(envtest.User{Name: "gleaner-dev", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding an admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", kubeconfig, err)
	}
	fmt.Printf("devapi: kube-apiserver at %s; kubeconfig %s; etcd data in %s\n", cfg.Host, kubeconfig, etcdDataDir(env))
	<-ctx.Done()
	fmt.Println("devapi: stopping")
	return nil
}

// etcdDataDir is the directory envtest gave etcd, so that a stop can be checked to have removed it.
func etcdDataDir(env *envtest.Environment) string {
	if etcd := env.ControlPlane.Etcd; etcd != nil {
		return etcd.DataDir
	}
	return ""
}
