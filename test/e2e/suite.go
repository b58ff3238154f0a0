// Package e2e is Gleaner's end-to-end suite: a real single-node cluster (internal/localcluster) with Gleaner
// deployed from config/local, and tests that check what really happens on the node.
//
// One cluster serves the whole package: TestMain starts it, every test uses it, and TestMain tears it down. A
// feature adds one file here with its tests, each starting with
//
//	e := suite.Env(t)
//
// which gives the cluster, a client with Gleaner's API types, kubectl and wait helpers.
//
// The tests run only when GLEANER_E2E=1 (`make e2e` sets it), so plain `go test ./...` never starts a cluster: they
// skip, also under CI, where `make e2e` runs them. With GLEANER_E2E=1 on a machine where the cluster cannot run (not
// root, no writable cgroup v1) they skip and say why, and fail under CI=true (test/ci).
package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// EnableVar must be 1 for the suite to start a cluster.
const EnableVar = "GLEANER_E2E"

// DefaultStateDir is the suite's state directory: not the one of `make run`, so its logs survive a test run.
const DefaultStateDir = "/var/lib/gleaner-e2e"

// GleanerNamespace is where config/local deploys Gleaner.
const GleanerNamespace = "gleaner-system"

// Suite is the cluster shared by a package's tests.
type Suite struct {
	// StateDir is the cluster's state directory ($GLEANER_E2E_STATE or DefaultStateDir).
	StateDir string
	// RepoRoot is Gleaner's source tree.
	RepoRoot string
	// Before is the machine as it was before the suite's first Up, for the teardown test.
	Before MachineSnapshot

	// disabled says why the suite was not asked to run (GLEANER_E2E is not 1): a skip, also under CI.
	disabled string
	// cannotRun says why this machine cannot run the cluster: a skip, or a failure under CI=true.
	cannotRun string
	cluster   *localcluster.Cluster
	started   bool
	// startPending: a test replaced the cluster and stopped it (StartClusterLater); the next Env starts it again.
	startPending bool
	// startErr is why that start failed: every later test fails with it rather than on a half-deployed cluster.
	startErr error
	// imagesDir holds the images the suite built for its cluster starts; tearDown removes it.
	imagesDir string

	interruptMu sync.Mutex
	// onInterrupt run, last registered first, when a signal ends the run, before the cluster is torn down.
	onInterrupt []func()
}

// OnInterrupt registers f to run when SIGINT or SIGTERM ends the run, before the teardown, and returns the func
// that unregisters it. A benchmark whose load generator runs at a real-time priority puts it back with one: a
// generator still at SCHED_RR while the cluster goes away left the teardown a few percent of the CPUs, and the
// process had to be killed.
func (s *Suite) OnInterrupt(f func()) (unregister func()) {
	s.interruptMu.Lock()
	defer s.interruptMu.Unlock()
	s.onInterrupt = append(s.onInterrupt, f)
	i := len(s.onInterrupt) - 1
	return func() {
		s.interruptMu.Lock()
		defer s.interruptMu.Unlock()
		s.onInterrupt[i] = nil
	}
}

// interrupted runs the OnInterrupt funcs still registered, last first.
func (s *Suite) interrupted() {
	s.interruptMu.Lock()
	fs := slices.Clone(s.onInterrupt)
	s.interruptMu.Unlock()
	for _, f := range slices.Backward(fs) {
		if f != nil {
			f()
		}
	}
}

// NewSuite returns a suite that Run starts.
func NewSuite() *Suite { return &Suite{} }

// Run is the package's TestMain: it starts the cluster and deploys Gleaner, runs the tests, and tears the cluster
// down (also on SIGINT or SIGTERM). Pass its result to os.Exit.
func (s *Suite) Run(m *testing.M) int {
	if err := s.setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		_ = s.tearDown() // it reports its own error
		return 1
	}
	if why := s.disabled + s.cannotRun; why != "" {
		fmt.Fprintf(os.Stderr, "e2e: %s\n", why)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "e2e: interrupted; tearing the cluster down")
		s.interrupted()
		_ = s.tearDown() // it reports its own error
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sig)
	if err := s.tearDown(); err != nil && code == 0 {
		code = 1
	}
	return code
}

func (s *Suite) setUp() error {
	if os.Getenv(EnableVar) != "1" {
		s.disabled = EnableVar + " is not 1; run `make e2e` to run the end-to-end tests on a real local cluster"
		return nil
	}
	if err := localcluster.Preflight(); err != nil {
		s.cannotRun = err.Error()
		return nil
	}
	s.StateDir = os.Getenv("GLEANER_E2E_STATE")
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	s.RepoRoot = root
	// GLEANER_E2E_IMAGES: images built beforehand (hack/cgroupv2-node.sh builds them on the host for its machine).
	// Without it the suite builds them once, for all its cluster starts, instead of once per start.
	images := os.Getenv("GLEANER_E2E_IMAGES")
	if images == "" {
		if images, err = s.buildImages(); err != nil {
			return err
		}
	}
	s.cluster, err = localcluster.New(localcluster.Config{StateDir: s.StateDir, RepoRoot: root, ImagesTarball: images})
	if err != nil {
		return err
	}
	// Before must be the machine without a cluster: a snapshot taken while an earlier run's cluster is still up
	// counts its mounts and cgroups as the machine's own, and the teardown tests then find them missing.
	if errors.Is(localcluster.Running(s.StateDir), localcluster.ErrAlreadyRunning) {
		fmt.Fprintf(os.Stderr, "e2e: a cluster from an earlier run is still up in %s; tearing it down first\n", s.StateDir)
		if err := s.cluster.Down(context.Background()); err != nil {
			return err
		}
	}
	s.Before = TakeSnapshot(s.StateDir)
	return s.StartCluster(context.Background())
}

// buildImages builds the images into a directory of the suite's own, which tearDown removes, and returns the
// tarball's path: what `gleaner-local build-images` does.
func (s *Suite) buildImages() (string, error) {
	dir, err := os.MkdirTemp("", "gleaner-e2e-images-")
	if err != nil {
		return "", err
	}
	s.imagesDir = dir
	b, err := localcluster.New(localcluster.Config{StateDir: dir, RepoRoot: s.RepoRoot})
	if err != nil {
		return "", err
	}
	if err := b.BuildImages(context.Background()); err != nil {
		return "", fmt.Errorf("building the images for the suite: %w", err)
	}
	return b.ImagesTarball(), nil
}

// StartCluster brings the cluster up and deploys Gleaner from config/local. A cluster left running in the suite's
// own state directory (by a test binary that was killed) is torn down first.
func (s *Suite) StartCluster(ctx context.Context) error {
	return s.startCluster(ctx, func(ctx context.Context) error {
		return s.cluster.Apply(ctx, filepath.Join(s.RepoRoot, "config", "local"))
	})
}

// StartClusterDeploying brings the cluster up and deploys Gleaner with deploy, then waits until its workloads are
// ready.
func (s *Suite) StartClusterDeploying(ctx context.Context, deploy func(context.Context, *localcluster.Cluster) error) error {
	return s.startCluster(ctx, func(ctx context.Context) error { return deploy(ctx, s.cluster) })
}

// ChartRelease is the helm release docs/install.md installs.
const ChartRelease = "gleaner"

func (s *Suite) startCluster(ctx context.Context, deploy func(context.Context) error) error {
	err := s.cluster.Up(ctx)
	if errors.Is(err, localcluster.ErrAlreadyRunning) {
		fmt.Fprintf(os.Stderr, "e2e: a cluster from an earlier run is still up in %s; restarting it\n", s.StateDir)
		if err := s.cluster.Down(ctx); err != nil {
			return err
		}
		err = s.cluster.Up(ctx)
	}
	if err != nil {
		return err
	}
	s.started = true
	if err := deploy(ctx); err != nil {
		return err
	}
	return s.cluster.WaitWorkloadsReady(ctx, GleanerNamespace, 3*time.Minute)
}

// StartClusterLater has the next test's Env start the cluster from config/local: a test that replaced the suite's
// cluster stops it and calls this in its cleanup. When no test follows, nothing starts (the run's last test would
// otherwise start a cluster only for tearDown to stop it).
func (s *Suite) StartClusterLater() { s.startPending = true }

// StopCluster tears the cluster down. When that fails the cluster counts as running, so that tearDown tries again.
func (s *Suite) StopCluster(ctx context.Context) error {
	if err := s.cluster.Down(ctx); err != nil {
		return err
	}
	s.started = false
	return nil
}

func (s *Suite) tearDown() error {
	if s.imagesDir != "" {
		_ = os.RemoveAll(s.imagesDir)
	}
	if s.cluster == nil || !s.started {
		return nil
	}
	if err := s.StopCluster(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return err
	}
	return nil
}

// repoRoot is two directories above this file's package: test/e2e.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Join(wd, "..", "..")
	if _, err := os.Stat(filepath.Join(root, "hack", "kube-build.sh")); err != nil {
		return "", fmt.Errorf("the e2e tests run from test/e2e in Gleaner's tree: %w", err)
	}
	return filepath.Abs(root)
}

// Env is what a test gets: the running cluster and clients for it.
type Env struct {
	// Cluster is the local cluster.
	Cluster *localcluster.Cluster
	// Suite is the suite, for the tests that stop and start the cluster.
	Suite *Suite
	// Clientset is a typed client for the built-in kinds.
	Clientset kubernetes.Interface
	// Client is a controller-runtime client that knows Gleaner's kinds too.
	Client client.Client
	// Ctx ends with the test.
	Ctx context.Context
	t   testing.TB
}

// Env returns the cluster for t. It skips t when the suite was not asked to run, and when the machine cannot run
// the cluster (failing t instead under CI=true).
func (s *Suite) Env(t testing.TB) *Env {
	t.Helper()
	if s.disabled != "" {
		t.Skip("e2e: " + s.disabled)
	}
	if s.cannotRun != "" {
		ci.Skipf(t, "e2e: %s", s.cannotRun)
	}
	if s.startPending {
		s.startPending = false
		if err := s.StartCluster(context.Background()); err != nil {
			s.startErr = fmt.Errorf("starting the cluster again from config/local after a test that replaced it: %w", err)
		}
	}
	if s.startErr != nil {
		t.Fatalf("e2e: %v", s.startErr)
	}
	if !s.started {
		t.Fatal("e2e: the cluster is not running (an earlier test failed to restart it)")
	}
	cs, err := s.cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Cluster: s.cluster, Suite: s, Clientset: cs, Client: c, Ctx: t.Context(), t: t}
}

// Kubectl runs kubectl against the cluster and fails the test when it fails.
func (e *Env) Kubectl(args ...string) string {
	e.t.Helper()
	out, err := e.Cluster.Kubectl(e.Ctx, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// Eventually polls cond every interval until it returns true, failing the test with the last message cond gave
// when timeout passes.
func (e *Env) Eventually(timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.Ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		// A call the timeout cut short says only that (a rate limiter's "would exceed context deadline", which it
		// returns before the deadline when its wait would pass it): the message before it says what was still wrong.
		deadline, _ := ctx.Deadline()
		if ctx.Err() == nil && time.Until(deadline) > time.Second || last == "" {
			last = msg
		}
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("not true after %s: %s", timeout, last)
	}
}

// RunPod creates the pod in a namespace of its own (deleted with the test) and waits until it runs.
func (e *Env) RunPod(pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	return e.RunPodIn(e.Namespace(), pod)
}

// RunPodIn creates the pod in namespace ns, as a non-root user unless it says otherwise (NonRoot), and waits until
// it runs.
func (e *Env) RunPodIn(ns string, pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	pod.Namespace = ns
	NonRoot(&pod.Spec)
	created, err := e.Clientset.CoreV1().Pods(ns).Create(e.Ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	var got *corev1.Pod
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		got, err = e.Clientset.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodRunning, e.podProgress(ctx, got)
	})
	return got
}

// podProgress says where a pod that does not run yet stands: its phase, conditions and containers, and, while it is
// not scheduled, what the node offers of the extended resources it requests, with their derivations.
func (e *Env) podProgress(ctx context.Context, pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s is %s", pod.Name, pod.Status.Phase)
	scheduled := pod.Spec.NodeName != ""
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s", c.Type, c.Status)
		if c.Reason != "" || c.Message != "" {
			fmt.Fprintf(&b, " (%s: %s)", c.Reason, c.Message)
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			fmt.Fprintf(&b, "; container %s waiting (%s: %s)", c.Name, w.Reason, w.Message)
		}
	}
	if scheduled {
		return b.String()
	}
	b.WriteString("; not scheduled")
	// Reads of their own: the wait's context may be about to end, and this is what its last message says.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		return b.String() + "; reading the node: " + err.Error()
	}
	requested := map[corev1.ResourceName]bool{}
	for _, c := range pod.Spec.Containers {
		for r := range c.Resources.Requests {
			if strings.Contains(string(r), "/") {
				requested[r] = true
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(requested)) {
		q := node.Status.Allocatable[r]
		fmt.Fprintf(&b, "; the node offers %s %s: %s", r, q.String(), e.derivation(ctx, node, r))
	}
	return b.String()
}

// DeletePod deletes the pods and waits until they are all gone.
func (e *Env) DeletePod(pods ...*corev1.Pod) {
	e.t.Helper()
	// All deletions first, then one wait: the kubelet stops the pods side by side, not one after the other.
	for _, pod := range pods {
		if err := e.Clientset.CoreV1().Pods(pod.Namespace).Delete(e.Ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			e.t.Fatalf("deleting pod %s: %v", pod.Name, err)
		}
	}
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		for _, pod := range pods {
			_, err := e.Clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("pod %s still there (%v)", pod.Name, err)
			}
		}
		return true, ""
	})
}

// Namespace creates a namespace named after the test and deletes it when the test ends.
func (e *Env) Namespace() string {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	created, err := e.Clientset.CoreV1().Namespaces().Create(e.Ctx, ns, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating a namespace: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.Clientset.CoreV1().Namespaces().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	return created.Name
}

// PauseImage is the image of a container that only waits (test/workloads/pause).
const PauseImage = "gleaner.local/pause:dev"

// BurnerImage is the image of a container that burns the CPU its --load flag asks for (test/workloads/burner).
const BurnerImage = "gleaner.local/burner:dev"

// PodUser is the user and group the suite's pods run as: nobody, as production pods run as users of their own.
// A feature that works only for root's processes (the agent writing a process's oom_score_adj, which belongs to the
// process's user) fails here as it would there.
const PodUser = 65534

// NonRoot has the pod run as PodUser, and refused as root (runAsNonRoot), unless its spec names a user already: the
// suite's pods run as non-root users, and a test that needs root says so in its pod.
func NonRoot(spec *corev1.PodSpec) {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	if sc.RunAsUser != nil {
		return
	}
	sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot = ptr.To[int64](PodUser), ptr.To[int64](PodUser), ptr.To(true)
}
