package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gleaner-sh/gleaner/internal/hostpkg"
	"github.com/gleaner-sh/gleaner/internal/images"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// ErrAlreadyRunning is returned by Up when the state directory's cluster still runs.
var ErrAlreadyRunning = errors.New("a local cluster is already running")

// componentReadyTimeout bounds the wait for one component to serve. The API server's first start on a busy
// two-core machine takes tens of seconds (it installs its bootstrap policy).
const componentReadyTimeout = 3 * time.Minute

// Cluster is the local cluster of one state directory. Its methods may be called from different processes: the
// state directory, not the value, holds what runs.
type Cluster struct {
	cfg    Config
	layout Layout
}

// New returns the cluster of cfg.StateDir; it starts nothing.
func New(cfg Config) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Cluster{cfg: cfg, layout: Layout{Dir: cfg.StateDir}}, nil
}

// Layout is the cluster's state directory.
func (c *Cluster) Layout() Layout { return c.layout }

// Kubeconfig is the admin kubeconfig, valid while the cluster runs.
func (c *Cluster) Kubeconfig() string { return c.layout.Kubeconfig() }

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.cfg.Out, "local-cluster: "+format+"\n", args...)
}

// lock takes the state directory's lock so that two Ups, or an Up and a Down, never interleave. It does not wait:
// a second command is told at once.
func (c *Cluster) lock() (unlock func(), err error) {
	if err := os.MkdirAll(c.layout.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	f, err := os.OpenFile(c.layout.LockFile(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another gleaner-local up or down is running on %s", c.layout.Dir)
		}
		return nil, fmt.Errorf("locking %s: %w", c.layout.LockFile(), err)
	}
	return func() { _ = f.Close() }, nil
}

// Up builds what is missing, starts every component in order and returns once the node is Ready. When a cluster
// from the same state directory runs, it returns an error wrapping ErrAlreadyRunning and touches nothing; when one
// did not stop cleanly, it is cleaned up first. If Up fails, or ctx ends, what it started is torn down again.
func (c *Cluster) Up(ctx context.Context) error {
	if c.cfg.RepoRoot == "" {
		return errors.New("starting the local cluster needs the repository root (Config.RepoRoot) to build its binaries")
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()

	if err := c.cleanUpPrevious(ctx); err != nil {
		return err
	}
	if err := c.checkMachine(); err != nil {
		return err
	}
	start := c.cfg.Clock.Now()
	if err := hostpkg.ThisHost().Ensure(ctx, c.cfg.Out, hostpkg.For(hostpkg.Run)); err != nil {
		return err
	}
	bins, err := buildBinaries(ctx, c.cfg.RepoRoot, c.cfg.Out)
	if err != nil {
		return err
	}
	st := &State{StartedAt: start, CreatedHostPaths: missingPaths(watchedHostPaths())}
	st.IPForward = readIPForward()
	st.Firewall = c.recordFirewall(ctx)
	if err := c.prepareDirs(bins); err != nil {
		return err
	}
	if c.cfg.ImagesTarball == "" {
		if err := c.BuildImages(ctx); err != nil {
			return err
		}
	} else if _, err := os.Stat(c.cfg.ImagesTarball); err != nil {
		return fmt.Errorf("the images built beforehand: %w", err)
	}
	// Building is reported apart from starting: on a fresh machine it is most of the first run (kube binaries,
	// containerd, images), and it happens once; start-up is what every later run costs.
	built := c.cfg.Clock.Now()
	c.logf("binaries and images ready after %s (built once into the cache; later runs reuse them)", built.Sub(start).Round(100*time.Millisecond))
	if err := st.write(c.layout.StateFile()); err != nil {
		return err
	}
	done := false
	defer func() {
		if done {
			return
		}
		c.logf("start failed; stopping what was started (logs stay in %s)", c.layout.LogDir())
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.teardown(tctx, st); err != nil {
			c.logf("%v", err)
		}
	}()
	if err := c.start(ctx, st, bins); err != nil {
		return err
	}
	c.logf("node %s Ready after %s of start-up; kubeconfig %s", NodeName, c.cfg.Clock.Since(built).Round(100*time.Millisecond), c.Kubeconfig())
	done = true
	return nil
}

// cleanUpPrevious returns ErrAlreadyRunning when the state directory's cluster runs, and tears down one that did
// not stop cleanly (processes gone, cluster.json still there).
func (c *Cluster) cleanUpPrevious(ctx context.Context) error {
	prev, err := readState(c.layout.StateFile())
	if errors.Is(err, errNoState) {
		return nil
	}
	if err == nil && len(prev.alive()) > 0 {
		return fmt.Errorf("%w from %s since %s (%d of %d components up): use `gleaner-local status` or `down`",
			ErrAlreadyRunning, c.layout.Dir, prev.StartedAt.Format(time.RFC3339), len(prev.alive()), len(prev.Processes))
	}
	c.logf("a previous cluster in %s did not stop cleanly; cleaning up first", c.layout.Dir)
	if prev == nil {
		prev = &State{}
	}
	if err := c.teardown(ctx, prev); err != nil {
		return fmt.Errorf("cleaning up the previous cluster: %w", err)
	}
	return nil
}

// checkMachine fails when the cluster cannot run here or another one runs.
func (c *Cluster) checkMachine() error {
	if err := Preflight(); err != nil {
		return err
	}
	if pid := c.otherKubelet(); pid != 0 {
		return fmt.Errorf("another local cluster runs on this machine (its kubelet: pid %d, %s); only one can: stop it first "+
			"with `gleaner-local --state-dir DIR down`", pid, cmdline(pid))
	}
	return portsFree()
}

// prepareDirs empties the data directories and the logs of an earlier run and links kubectl and ctr into bin/.
func (c *Cluster) prepareDirs(bins binaries) error {
	for _, d := range c.layout.dataDirs() {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("removing %s from an earlier run: %w", d, err)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := os.RemoveAll(c.layout.LogDir()); err != nil {
		return fmt.Errorf("removing the logs of an earlier run: %w", err)
	}
	if err := os.MkdirAll(c.layout.LogDir(), 0o755); err != nil {
		return fmt.Errorf("creating the log directory: %w", err)
	}
	for _, name := range []string{"kubectl", "ctr"} {
		if err := os.Symlink(bins[name], filepath.Join(c.layout.BinDir(), name)); err != nil {
			return fmt.Errorf("linking %s into %s: %w", name, c.layout.BinDir(), err)
		}
	}
	return nil
}

// start writes the certificates and configuration, starts each component and waits for it, imports the images
// before the kubelet starts, and waits for the node to be Ready.
func (c *Cluster) start(ctx context.Context, st *State, bins binaries) error {
	p, err := writePKI(c.layout.PKIDir(), c.cfg.Clock.Now())
	if err != nil {
		return err
	}
	dns := clusterDNSServers()
	if len(dns) == 0 {
		c.logf("%s names no nameserver to stand in for the cluster DNS; pods with dnsPolicy ClusterFirst start with a "+
			"MissingClusterDNS warning", HostResolvConf)
	}
	v, err := cgroup.DetectVersion(HostCgroupRoot)
	if err != nil {
		return err
	}
	if err := writeConfigs(c.layout, p, dns, v == cgroup.V1); err != nil {
		return err
	}
	for _, comp := range components(c.layout, p) {
		if comp.name == "kubelet" {
			// Before the kubelet, so that no pod ever waits for an image.
			if err := c.ImportImages(ctx, c.startImages()); err != nil {
				return err
			}
		}
		t := c.cfg.Clock.Now()
		proc, err := startProcess(comp.name, bins[comp.program], comp.args, c.layout.Log(comp.name))
		if err != nil {
			return err
		}
		st.Processes = append(st.Processes, proc)
		if err := st.write(c.layout.StateFile()); err != nil {
			return err
		}
		if err := c.waitReady(ctx, comp, proc); err != nil {
			return err
		}
		c.logf("%-23s ready in %s (pid %d)", comp.name, c.cfg.Clock.Since(t).Round(10*time.Millisecond), proc.PID)
	}
	return c.waitNodeReady(ctx)
}

// waitReady polls the component's readiness and fails early, with its log's tail, if it exits.
func (c *Cluster) waitReady(ctx context.Context, comp component, proc Process) error {
	last := "not checked yet"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, componentReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if !proc.Alive() {
			return false, fmt.Errorf("%s exited", comp.name)
		}
		if err := comp.ready(ctx); err != nil {
			last = err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s (last check: %s): %w\n%s", comp.name, last, err, tail(c.layout.Log(comp.name), 20))
	}
	return nil
}

// waitNodeReady waits for the node's Ready condition: the kubelet has registered, containerd's CNI network is up
// and the controller manager has removed the not-ready taint.
func (c *Cluster) waitNodeReady(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.cfg.NodeReadyTimeout, true, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, t := range node.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady {
				last = "taint " + t.Key
				return false, nil
			}
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		last = "no Ready condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready (last seen: %s): %w\n%s", NodeName, last, err,
			tail(c.layout.Log("kubelet"), 20))
	}
	return nil
}

// Clientset returns a client for the running cluster, authenticated as the admin.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading the local cluster's kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for the local cluster: %w", err)
	}
	return cs, nil
}

// BuildImages compiles the repository's commands (images.DefaultPackages) into bin/ and writes their images into
// the images tarball that Up imports; the pause command is also tagged as the sandbox image.
func (c *Cluster) BuildImages(ctx context.Context) error {
	t := c.cfg.Clock.Now()
	bins, err := images.BuildBinaries(ctx, c.cfg.RepoRoot, c.layout.BinDir(), images.DefaultPackages())
	if err != nil {
		return err
	}
	imgs := images.ForBinaries(bins, map[string][]string{"pause": {PauseImage}})
	if err := images.WriteTarball(c.imagesTarball(), imgs); err != nil {
		return err
	}
	var refs []string
	for _, im := range imgs {
		refs = append(refs, im.Refs...)
	}
	c.logf("built %d images in %s: %s", len(imgs), c.cfg.Clock.Since(t).Round(10*time.Millisecond), strings.Join(refs, " "))
	return nil
}

func (c *Cluster) imagesTarball() string { return filepath.Join(c.layout.ImagesDir(), "images.tar") }

// ImagesTarball is the file BuildImages writes; a copy of it can be Config.ImagesTarball of another cluster.
func (c *Cluster) ImagesTarball() string { return c.imagesTarball() }

// startImages is the tarball Up imports: the one built beforehand, or BuildImages'.
func (c *Cluster) startImages() string {
	if c.cfg.ImagesTarball != "" {
		return c.cfg.ImagesTarball
	}
	return c.imagesTarball()
}

// ReloadImages builds the images again and imports them into the running cluster: after a code change, this and
// a restart of the pods (kubectl rollout restart) run the new code.
func (c *Cluster) ReloadImages(ctx context.Context) error {
	if err := c.BuildImages(ctx); err != nil {
		return err
	}
	return c.ImportImages(ctx, c.imagesTarball())
}

// ImportImages imports an image tarball (docker-archive) into containerd's k8s.io namespace, where the kubelet
// finds images.
func (c *Cluster) ImportImages(ctx context.Context, tarball string) error {
	t := c.cfg.Clock.Now()
	if _, err := c.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("importing images from %s: %w", tarball, err)
	}
	c.logf("imported the images in %s", c.cfg.Clock.Since(t).Round(10*time.Millisecond))
	return nil
}

// ctr runs containerd's CLI against the cluster's containerd in the k8s.io namespace and returns its output.
func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	base := []string{"--address", c.layout.ContainerdSocket(), "--namespace", K8sNamespace}
	cmd := exec.CommandContext(ctx, filepath.Join(c.layout.BinDir(), "ctr"), append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// Kubectl runs kubectl v1.36 with the admin kubeconfig and bin/ first on PATH (so kubectl plugins such as
// kubectl-glean are found) and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := c.kubectlCommand(ctx, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// kubectlCommand is the command Kubectl runs.
func (c *Cluster) kubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.layout.BinDir(), "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig(), "KUBECACHEDIR="+c.layout.Path("kubectl-cache"),
		"PATH="+c.layout.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// Status is what Status reports.
type Status struct {
	// Running is true when every recorded component runs.
	Running bool
	// StateDir is the state directory.
	StateDir string
	// StartedAt is when Up began; zero when no cluster was started.
	StartedAt time.Time
	// Components are the recorded components with whether each runs and its resident memory.
	Components []ComponentStatus
}

// ComponentStatus is one component of Status.
type ComponentStatus struct {
	Process
	// Alive is whether the process runs.
	Alive bool
	// RSSBytes is its resident memory.
	RSSBytes uint64
}

// Status reads the state directory; with no cluster started it returns a Status with Running false.
func (c *Cluster) Status() (Status, error) {
	s := Status{StateDir: c.layout.Dir}
	st, err := readState(c.layout.StateFile())
	if errors.Is(err, errNoState) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.StartedAt = st.StartedAt
	s.Running = len(st.Processes) > 0
	for _, p := range st.Processes {
		cs := ComponentStatus{Process: p, Alive: p.Alive(), RSSBytes: p.RSS()}
		s.Running = s.Running && cs.Alive
		s.Components = append(s.Components, cs)
	}
	return s, nil
}

// portsFree fails naming every port of the cluster something else listens on.
func portsFree() error {
	var errs []error
	for _, port := range []int{APIServerPort, EtcdClientPort, EtcdPeerPort, KubeletPort, KubeletHealthzPort,
		ControllerManagerPort, SchedulerPort} {
		l, err := net.Listen("tcp", net.JoinHostPort(Host, strconv.Itoa(port)))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d on %s is taken (another local cluster, or another program?): %w", port, Host, err))
			continue
		}
		_ = l.Close()
	}
	return errors.Join(errs...)
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", path, strings.Join(lines, "\n"))
}
