package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Apply applies a kustomization directory (`kubectl kustomize dir | kubectl apply --server-side -f -`) and waits
// for the CRDs it holds to be established, so that objects of those kinds can be created right after. It renders
// the directory once, for the apply and to see whether it holds CRDs: on the emulated CPUs of the cgroup v2 node a
// second rendering took seconds. gleaner-agent's DaemonSet, where the directory holds it, is pointed at this
// cluster's kubelet directory (withKubeletDir).
func (c *Cluster) Apply(ctx context.Context, dir string) error {
	start := c.cfg.Clock.Now()
	render := c.kubectlCommand(ctx, "kustomize", dir)
	var stderr bytes.Buffer
	render.Stderr = &stderr
	rendered, err := render.Output()
	if err != nil {
		return fmt.Errorf("rendering %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	if rendered, err = withKubeletDir(rendered, c.layout.KubeletDir()); err != nil {
		return fmt.Errorf("rendering %s: %w", dir, err)
	}
	apply := c.kubectlCommand(ctx, "apply", "--server-side", "--force-conflicts", "-f", "-")
	apply.Stdin = bytes.NewReader(rendered)
	if out, err := apply.CombinedOutput(); err != nil {
		return fmt.Errorf("applying %s: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	applied := c.cfg.Clock.Now()
	if bytes.Contains(rendered, []byte("kind: CustomResourceDefinition")) {
		if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
			return fmt.Errorf("waiting for the CRDs of %s: %w", dir, err)
		}
	}
	c.logf("applied %s in %s, its CRDs established %s later", filepath.Base(dir),
		applied.Sub(start).Round(10*time.Millisecond), c.cfg.Clock.Since(applied).Round(10*time.Millisecond))
	return nil
}

// InstallChart installs the Helm chart in chartDir as release into namespace with the values file (`helm upgrade
// --install`, so a second call upgrades), with the helm binary given, and waits for the CRDs it holds to be
// established, as Apply does. helm creates the namespace when it is missing; the chart's own Namespace object then
// adds its labels. helm keeps its configuration, cache and release index under the state directory, not in $HOME.
// The chart's agent.flags.kubelet-root-dir is set to this cluster's kubelet directory, as Apply does.
func (c *Cluster) InstallChart(ctx context.Context, helm, chartDir, valuesFile, release, namespace string) error {
	cmd := c.HelmCommand(ctx, helm, "upgrade", "--install", release, chartDir, "--namespace", namespace,
		"--create-namespace", "--values", valuesFile, "--set", "agent.flags.kubelet-root-dir="+c.layout.KubeletDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing the chart %s with helm: %w: %s", chartDir, err, strings.TrimSpace(string(out)))
	}
	if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		return fmt.Errorf("waiting for the CRDs of the chart %s: %w", chartDir, err)
	}
	return nil
}

// HelmCommand returns the command running the helm binary with args against the cluster, with helm's
// configuration, cache and release data, and the discovery cache of its Kubernetes client (KUBECACHEDIR, else
// ~/.kube/cache), under the state directory: nothing in $HOME.
func (c *Cluster) HelmCommand(ctx context.Context, helm string, args ...string) *exec.Cmd {
	home := c.layout.Path("helm")
	cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", c.Kubeconfig())...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECACHEDIR="+filepath.Join(home, "kube-cache"))
	return cmd
}

// Helm returns the helm binary hack/tool.sh builds from the Go module proxy into the per-user cache (the first
// time about 2.5 minutes on 2 cores; it says so on stderr), for InstallChart.
func Helm(ctx context.Context, repoRoot string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "tool.sh"), "helm")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building helm with hack/tool.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// WaitWorkloadsReady waits until every Deployment and DaemonSet in the namespace has all its pods updated and
// ready. It needs no names, so a workload added to the manifests is waited for with no change here.
func (c *Cluster) WaitWorkloadsReady(ctx context.Context, namespace string, timeout time.Duration) error {
	start := c.cfg.Clock.Now()
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	var notReady []string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		notReady = nil
		deps, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			notReady = []string{err.Error()}
			return false, nil
		}
		for _, d := range deps.Items {
			if !deploymentReady(&d) {
				notReady = append(notReady, fmt.Sprintf("deployment/%s (%d of %d ready)", d.Name, d.Status.ReadyReplicas, replicas(d.Spec.Replicas)))
			}
		}
		dss, err := cs.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			notReady = []string{err.Error()}
			return false, nil
		}
		for _, d := range dss.Items {
			if !daemonSetReady(&d) {
				notReady = append(notReady, fmt.Sprintf("daemonset/%s (%d of %d ready)", d.Name, d.Status.NumberReady, d.Status.DesiredNumberScheduled))
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		pods, _ := c.Kubectl(ctx, "get", "pods", "-n", namespace, "-o", "wide")
		return fmt.Errorf("waiting for the workloads in %s (not ready: %s): %w\n%s", namespace, strings.Join(notReady, ", "), err, pods)
	}
	c.logf("the workloads in %s ready in %s", namespace, c.cfg.Clock.Since(start).Round(10*time.Millisecond))
	return nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func deploymentReady(d *appsv1.Deployment) bool {
	want := replicas(d.Spec.Replicas)
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.ReadyReplicas == want && d.Status.AvailableReplicas == want
}

func daemonSetReady(d *appsv1.DaemonSet) bool {
	want := d.Status.DesiredNumberScheduled
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedNumberScheduled == want &&
		d.Status.NumberReady == want
}
