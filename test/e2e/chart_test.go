package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestInstallFromRegistry: Gleaner installs on the local cluster from a registry as docs/install.md says, and
// upgrades from its last release to the working tree with workloads running. `make push` puts the images and the
// chart of the last release (CHANGELOG.md's, built in a git worktree of its commit) and of the working tree into a
// real registry (go-containerregistry's, in this process, over HTTP on loopback); the cluster starts again and runs
// the install commands of docs/install.md verbatim for the release, with the local cluster's values added to helm
// (runDocCommands). Then: the pods run the release's pushed images, pulled by containerd from the registry; helm
// records the release as deployed; the namespace helm creates carries the chart's Pod Security labels; the agent
// reports the node's NodeMetric and the manager turns it into batch resources. A service pod and a batch pod start,
// and docs/install.md's upgrade commands (the CRDs, then helm upgrade) move to the working tree's images: both pods
// keep running, never restarted nor evicted, with their cgroups' values; the webhook keeps the caBundle the manager
// injected; `helm uninstall` gives the Node back through the chart's pre-delete hook. Last, docs/install.md's
// kustomize install of the working tree from the same registry (expectKustomizeInstall). The next test gets the
// cluster from config/local again.
func TestInstallFromRegistry(t *testing.T) {
	e := suite.Env(t)
	helm, err := localcluster.Helm(e.Ctx, e.Suite.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	reg := startRegistry(t)
	release := lastRelease(t, e.Suite.RepoRoot)
	releaseTree := worktree(t, e.Suite.RepoRoot, release.commit)
	releasePushed := makePush(t, e, releaseTree, helm, reg, release.version)
	pushed := makePush(t, e, e.Suite.RepoRoot, helm, reg, e2eVersion)

	// Registered first: a failed stop below still ends with the suite's cluster back for the next test.
	t.Cleanup(func() {
		if err := e.Suite.StopCluster(context.Background()); err != nil {
			t.Errorf("down after the install from the registry: %v", err)
		}
		e.Suite.StartClusterLater()
	})
	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Fatalf("down before installing from the registry: %v", err)
	}
	start := time.Now()
	install := docBlock(t, filepath.Join(e.Suite.RepoRoot, "docs", "install.md"), "install-from-registry")
	if err := e.Suite.StartClusterDeploying(context.Background(), func(ctx context.Context, c *localcluster.Cluster) error {
		return runDocCommands(ctx, t, c, t.TempDir(), releaseTree, helm, install, reg, release.version)
	}); err != nil {
		t.Fatalf("installing %s from the registry: %v", release.version, err)
	}
	t.Logf("cluster up, Gleaner %s installed from %s and ready in %s", release.version, reg, time.Since(start).Round(time.Second))
	e = suite.Env(t) // clients for the new cluster
	dumpOnFailure(t, e)
	expectPulledFrom(t, e, releasePushed, release.version)
	expectChartRelease(t, e, helm)
	expectBatchResources(t, e)

	running := startUpgradeWorkloads(t, e)
	start = time.Now()
	upgrade := docBlock(t, filepath.Join(e.Suite.RepoRoot, "docs", "install.md"), "upgrade-from-registry")
	if err := runDocCommands(e.Ctx, t, e.Cluster, t.TempDir(), e.Suite.RepoRoot, helm, upgrade, reg, e2eVersion); err != nil {
		t.Fatalf("upgrading from %s: %v", release.version, err)
	}
	t.Logf("upgraded from %s to the working tree in %s", release.version, time.Since(start).Round(time.Second))
	expectPulledFrom(t, e, pushed, e2eVersion)
	expectChartRelease(t, e, helm)
	running.expectUntouched(t, e)
	expectCABundleKept(t, e)
	expectUninstallGivesBack(t, e, helm)
	expectKustomizeInstall(t, e, helm, reg, pushed)
	expectColocationOn(t, e, helm, reg)
}

// e2eVersion is the version `make push` stamps on the working tree's images and chart in TestInstallFromRegistry;
// its chart's version is the same without the v.
const e2eVersion = "v0.2.0-e2e"

// release is a release CHANGELOG.md records: its version (v0.1.0) and commit.
type release struct{ version, commit string }

// lastRelease is the newest release of CHANGELOG.md: the first heading "## [X.Y.Z] - date" and the first commit
// hash of its section.
func lastRelease(t *testing.T, repoRoot string) release {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}\n(?s:(.*?))(?:\n## |\z)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md records no release (a heading \"## [X.Y.Z] - YYYY-MM-DD\")")
	}
	commit := regexp.MustCompile(`\b[0-9a-f]{40}\b`).Find(m[2])
	if commit == nil {
		t.Fatalf("CHANGELOG.md's release %s names no commit (40 hex digits)", m[1])
	}
	return release{version: "v" + string(m[1]), commit: string(commit)}
}

// worktree checks commit out in a git worktree of repoRoot for the test and returns its directory. A clone without
// the commit (a shallow one) fetches it from its origin first; where that fails too, so does the test: the upgrade
// starts from that tree.
func worktree(t *testing.T, repoRoot, commit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "release")
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", repoRoot}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git("worktree", "add", "--detach", dir, commit); err != nil {
		if ferr := git("fetch", "--quiet", "origin", commit); ferr != nil {
			t.Fatalf("the last release's tree: %v; fetching its commit: %v", err, ferr)
		}
		if err := git("worktree", "add", "--detach", dir, commit); err != nil {
			t.Fatalf("the last release's tree: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := git("worktree", "remove", "--force", dir); err != nil {
			t.Errorf("removing the release's worktree: %v", err)
		}
	})
	return dir
}

// upgradeWorkloads are the pods TestInstallFromRegistry keeps running through an upgrade, and their cgroups' values
// before it.
type upgradeWorkloads struct {
	pods    []*corev1.Pod
	cgroups map[string]cgroupValues // by pod cgroup, relative to the hierarchy's root
}

// startUpgradeWorkloads runs a service pod (Burstable, a CPU limit) and a batch pod (batch-cpu, its values written by
// the runtime hook) and reads their pod cgroups.
func startUpgradeWorkloads(t *testing.T, e *Env) upgradeWorkloads {
	t.Helper()
	svc := testutil.Pod("upgrade-svc").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").Container("c").Image(PauseImage).
		Requests("cpu", "100m", "memory", "32Mi").Limits("cpu", "300m", "memory", "64Mi").Obj()
	NonRoot(&svc.Spec)
	batch := batchReportPod("upgrade-batch", 100, 32<<20)
	NonRoot(&batch.Spec)
	w := upgradeWorkloads{cgroups: map[string]cgroupValues{}}
	for _, p := range []*corev1.Pod{svc, batch} {
		got := e.RunPod(p)
		w.pods = append(w.pods, got)
		qos := "burstable" // the service pod; the batch pod asks for no cpu or memory
		if got.Status.QOSClass == corev1.PodQOSBestEffort {
			qos = "besteffort"
		}
		dir := filepath.Join("kubepods", qos, "pod"+string(got.UID))
		w.cgroups[dir] = readCgroup(t, dir)
	}
	t.Logf("before the upgrade: %+v", w.cgroups)
	return w
}

// expectUntouched: each pod still runs as the same pod, never restarted, with its cgroups' values, and no pod of
// the cluster was evicted.
func (w upgradeWorkloads) expectUntouched(t *testing.T, e *Env) {
	t.Helper()
	for _, p := range w.pods {
		got, err := e.Clientset.CoreV1().Pods(p.Namespace).Get(e.Ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s after the upgrade: %v", p.Name, err)
			continue
		}
		if got.UID != p.UID || got.Status.Phase != corev1.PodRunning || got.DeletionTimestamp != nil {
			t.Errorf("pod %s after the upgrade: uid %s (was %s), %s, deleting %v", p.Name, got.UID, p.UID, got.Status.Phase, got.DeletionTimestamp)
		}
		for _, cs := range got.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("pod %s: container %s restarted %d times across the upgrade", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}
	for dir, before := range w.cgroups {
		if diff := cmp.Diff(before, readCgroup(t, dir)); diff != "" {
			t.Errorf("pod cgroup %s across the upgrade (-before +after):\n%s", dir, diff)
		}
	}
	events, err := e.Clientset.CoreV1().Events("").List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=Evicted"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		t.Errorf("pod %s/%s evicted across the upgrade: %s", ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Message)
	}
}

// expectUninstallGivesBack: `helm uninstall` runs the chart's pre-delete hook first, whose Job has the running
// manager take the batch resources off the Node (expectBatchResources saw them) before helm deletes the manager.
func expectUninstallGivesBack(t *testing.T, e *Env, helm string) {
	t.Helper()
	start := time.Now()
	out, err := e.Cluster.HelmCommand(e.Ctx, helm, "uninstall", ChartRelease, "--namespace", GleanerNamespace, "--timeout", "4m").CombinedOutput()
	if err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	t.Logf("helm uninstall, its give-back hook included, in %s", time.Since(start).Round(time.Second))
	if left := managerFields(t, e); len(left) > 0 {
		t.Errorf("after helm uninstall the Node still holds %v", left)
	}
}

// startRegistry serves an in-memory OCI registry on a loopback port until the test ends and returns its address
// with the path Gleaner's images go under: 127.0.0.1:PORT/gleaner.
func startRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String() + "/gleaner"
}

// makePush runs `make push` of the tree dir, stamped version, into the registry reg for this machine's architecture
// only and returns what it pushed: image name to the digest of its index.
func makePush(t *testing.T, e *Env, dir, helm, reg, version string) map[string]string {
	t.Helper()
	tmp := t.TempDir()
	platform := "linux/" + runtime.GOARCH
	cmd := exec.CommandContext(e.Ctx, "make", "--no-print-directory", "push", "REGISTRY="+reg, "VERSION="+version,
		"IMAGE_PLATFORMS="+platform, "PLATFORMS="+platform, "HELM="+helm, "HELM_PUSH_FLAGS=--plain-http",
		"IMAGES_DIR="+filepath.Join(tmp, "images"), "RELEASE_DIR="+filepath.Join(tmp, "release"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(tmp, "helm", "config"),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "helm", "cache"), "HELM_DATA_HOME="+filepath.Join(tmp, "helm", "data"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make push: %v\n%s", err, out)
	}
	t.Logf("make push REGISTRY=%s VERSION=%s in %s", reg, version, time.Since(start).Round(time.Second))
	pushed := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		// pushed 127.0.0.1:PORT/gleaner/gleaner-agent:v0.2.0-e2e@sha256:...
		ref, ok := strings.CutPrefix(line, "pushed ")
		if !ok {
			continue
		}
		tagged, digest, _ := strings.Cut(ref, "@")
		repo, _, _ := strings.Cut(strings.TrimPrefix(tagged, reg+"/"), ":")
		pushed[repo] = digest
	}
	if len(pushed) != 2 || pushed["gleaner-manager"] == "" || pushed["gleaner-agent"] == "" {
		t.Fatalf("make push pushed %v, want gleaner-manager and gleaner-agent:\n%s", pushed, out)
	}
	return pushed
}

// docBlock returns the shell block that follows the line "<!-- e2e: name -->" in the Markdown file path.
func docBlock(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- e2e: "+name+" -->\n")
	if !ok {
		t.Fatalf("%s has no block marked <!-- e2e: %s -->", path, name)
	}
	body, ok := strings.CutPrefix(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: the line after <!-- e2e: %s --> does not open a ```sh block", path, name)
	}
	block, _, ok := strings.Cut(body, "```\n")
	if !ok {
		t.Fatalf("%s: the block marked %s is not closed", path, name)
	}
	return block
}

// runDocCommands runs script, commands from docs/install.md or the README, with bash against the cluster c, in the directory
// dir: REGISTRY is reg, VERSION is version and CHART_VERSION the chart of version (pushed by makePush), kubectl and
// helm use the cluster's kubeconfig, and helm install and upgrade get what the local cluster needs besides, as the
// last flags: plain HTTP to the registry (helm pull too), and the config/local values of the tree repoRoot (host
// network, the API server on 127.0.0.1) with the images pulled, not imported.
func runDocCommands(ctx context.Context, t *testing.T, c *localcluster.Cluster, dir, repoRoot, helm, script, reg, version string) error {
	wrappers := t.TempDir()
	values := filepath.Join(repoRoot, "config", "local", "helm-values.yaml")
	wrapper := fmt.Sprintf(`#!/usr/bin/env bash
case "$1" in
install|upgrade) exec %q "$@" --plain-http --values %q --set manager.image.pullPolicy=IfNotPresent --set agent.image.pullPolicy=IfNotPresent ;;
pull) exec %q "$@" --plain-http ;;
esac
exec %q "$@"
`, helm, values, helm, helm)
	if err := os.WriteFile(filepath.Join(wrappers, "helm"), []byte(wrapper), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(c.HelmCommand(ctx, helm).Env, "KUBECONFIG="+c.Kubeconfig(), "REGISTRY="+reg, "VERSION="+version,
		"CHART_VERSION="+strings.TrimPrefix(version, "v"),
		"PATH="+wrappers+string(os.PathListSeparator)+c.Layout().BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	t.Logf("the docs' commands for %s:\n%s\n%s", version, script, out)
	if err != nil {
		return fmt.Errorf("the docs' commands: %w", err)
	}
	return nil
}

// expectKustomizeInstall: docs/install.md's kustomize install brings the working tree's pushed images up from the
// registry after helm uninstall. The doc's kustomization names config/default on GitHub, which this machine cannot
// reach; it is swapped for a base in the commands' directory (kustomize takes no absolute path) that is the tree's
// config/local with the images pulled rather than imported and the agent's pod-resources volume at the local
// kubelet's, what helm gets from config/local/helm-values.yaml in the same test. Then the pods run the pushed images
// and the manager publishes batch resources from the new agent's report.
func expectKustomizeInstall(t *testing.T, e *Env, helm, reg string, pushed map[string]string) {
	t.Helper()
	// helm uninstall does not wait for the pods, and the new ones ask for the same host ports.
	waitNoPods(e, GleanerNamespace)
	const remote = "https://github.com/gleaner-sh/gleaner//config/default?ref=$VERSION"
	script := docBlock(t, filepath.Join(e.Suite.RepoRoot, "docs", "install.md"), "install-kustomize-from-registry")
	if n := strings.Count(script, remote); n != 1 {
		t.Fatalf("docs/install.md's kustomize install names the base %s %d times, want once:\n%s", remote, n, script)
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "local-base")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	local, err := filepath.Rel(base, filepath.Join(e.Suite.RepoRoot, "config", "local"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: gleaner-manager, namespace: %[2]s}
      spec: {template: {spec: {containers: [{name: manager, imagePullPolicy: IfNotPresent}]}}}
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata: {name: gleaner-agent, namespace: %[2]s}
      spec:
        template:
          spec:
            containers: [{name: agent, imagePullPolicy: IfNotPresent}]
            volumes: [{name: pod-resources, hostPath: {path: %[3]s}}]
`, local, GleanerNamespace, filepath.Join(e.Cluster.Layout().KubeletDir(), "pod-resources"))
	if err := os.WriteFile(filepath.Join(base, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	// The doc's commands make the directory gleaner and write the kustomization there.
	script = strings.Replace(script, remote, "../local-base", 1)
	start := time.Now()
	if err := runDocCommands(e.Ctx, t, e.Cluster, dir, e.Suite.RepoRoot, helm, script, reg, e2eVersion); err != nil {
		t.Fatalf("installing with kustomize: %v", err)
	}
	t.Logf("installed with kustomize from %s in %s", reg, time.Since(start).Round(time.Second))
	expectPulledFrom(t, e, pushed, e2eVersion)
	expectBatchResources(t, e)
}

// expectColocationOn: after an install, docs/install.md's step 3 and the README's quick start work as written:
// colocation on from the sample ConfigMap, `kubectl glean nodes`, the sample ColocationProfile, a namespace labelled
// for it, a Job of the user's (my-job.yaml, written here: plain cpu and memory requests) and `kubectl glean explain
// NODE`, with this tree's kubectl-glean as the plugin. The Job's pod becomes a batch pod and runs.
func expectColocationOn(t *testing.T, e *Env, helm, reg string) {
	t.Helper()
	const namespace, node = "spark", "glean explain NODE"
	script := docBlock(t, filepath.Join(e.Suite.RepoRoot, "docs", "install.md"), "turn-colocation-on") +
		docBlock(t, filepath.Join(e.Suite.RepoRoot, "README.md"), "quick-start-colocation")
	if n := strings.Count(script, node); n != 1 {
		t.Fatalf("the README's quick start has %q %d times, want once:\n%s", node, n, script)
	}
	script = strings.Replace(script, node, "glean explain "+localcluster.NodeName, 1)
	// The commands name config/samples as a checkout's root has it, and the user's my-job.yaml in the same place.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(e.Suite.RepoRoot, "config"), filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	job := `apiVersion: batch/v1
kind: Job
metadata: {name: my-job}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: work
          image: ` + PauseImage + `
          imagePullPolicy: Never
          resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 100m, memory: 32Mi}}
`
	if err := os.WriteFile(filepath.Join(dir, "my-job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Kubectl("create", "namespace", namespace) // the user's own namespace, which the quick start labels
	gleanOnPath(e)
	if err := runDocCommands(e.Ctx, t, e.Cluster, dir, e.Suite.RepoRoot, helm, script, reg, e2eVersion); err != nil {
		t.Fatalf("turning colocation on as the README says: %v", err)
	}
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := e.Clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=my-job"})
		if err != nil {
			return false, err.Error()
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("the Job has %d pods, want 1", len(pods.Items))
		}
		p := pods.Items[0]
		req := p.Spec.Containers[0].Resources.Requests
		batch, plain := req[slov1alpha1.BatchCPU], req[corev1.ResourceCPU]
		// batch-cpu counts millicores in whole units: the Job's 100m of cpu is 100.
		return p.Spec.PriorityClassName == "gleaner-batch" && batch.Value() == 100 && plain.IsZero() &&
				p.Status.Phase == corev1.PodRunning,
			fmt.Sprintf("pod %s: priority class %q, requests %v, phase %s", p.Name, p.Spec.PriorityClassName, req, p.Status.Phase)
	})
}

// waitNoPods waits until namespace ns holds no pod.
func waitNoPods(e *Env, ns string) {
	e.t.Helper()
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := e.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left in %s", len(pods.Items), ns)
	})
}

// expectPulledFrom: the manager's and the agent's pods run the images make push pushed as version, by tag and by
// digest.
func expectPulledFrom(t *testing.T, e *Env, pushed map[string]string, version string) {
	t.Helper()
	for name, digest := range pushed {
		pods, err := e.Clientset.CoreV1().Pods(GleanerNamespace).List(e.Ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			t.Errorf("no %s pod", name)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue // a pod of the version before an upgrade, on its way out
			}
			for _, cs := range p.Status.ContainerStatuses {
				if !strings.HasSuffix(cs.Image, "/"+name+":"+version) || !strings.HasSuffix(cs.ImageID, "@"+digest) {
					t.Errorf("pod %s container %s runs %s (%s), want the pushed %s:%s@%s", p.Name, cs.Name, cs.Image, cs.ImageID, name, version, digest)
				}
			}
		}
	}
}

// expectChartRelease: helm recorded the release as deployed, the namespace carries the chart's Pod Security labels
// and the workloads are the chart's.
func expectChartRelease(t *testing.T, e *Env, helm string) {
	t.Helper()
	out, err := e.Cluster.HelmCommand(e.Ctx, helm, "status", ChartRelease, "--namespace", GleanerNamespace, "--output", "json").Output()
	if err != nil {
		t.Fatalf("helm status %s: %v", ChartRelease, err)
	}
	var status struct {
		Info struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &status); err != nil || status.Info.Status != "deployed" {
		t.Errorf("helm status %s: %q (%v)\n%s", ChartRelease, status.Info.Status, err, out)
	}

	ns, err := e.Clientset.CoreV1().Namespaces().Get(e.Ctx, GleanerNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" || ns.Labels["pod-security.kubernetes.io/audit"] != "restricted" {
		t.Errorf("namespace %s from helm --create-namespace and the chart: labels %v, want the chart's Pod Security levels", GleanerNamespace, ns.Labels)
	}
	for _, kind := range []string{"deployment/gleaner-manager", "daemonset/gleaner-agent"} {
		managedBy := e.Kubectl("-n", GleanerNamespace, "get", kind, "-o", "jsonpath={.metadata.labels.app\\.kubernetes\\.io/managed-by}")
		if managedBy != "Helm" {
			t.Errorf("%s is not the chart's: managed-by %q", kind, managedBy)
		}
	}

}

// dumpOnFailure logs, when t has failed, what the chart's Gleaner did (before the cleanup restarts the cluster).
func dumpOnFailure(t *testing.T, e *Env) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"-n", GleanerNamespace, "get", "pods", "-o", "wide"},
			{"-n", GleanerNamespace, "logs", "deployment/gleaner-manager", "--tail=40"},
			{"-n", GleanerNamespace, "logs", "daemonset/gleaner-agent", "--tail=40"},
			{"get", "nodemetric", "-o", "yaml"},
			{"get", "node", localcluster.NodeName, "-o", "jsonpath={.status.allocatable}"},
		} {
			out, err := e.Cluster.Kubectl(context.Background(), args...)
			t.Logf("kubectl %v (%v):\n%s", args, err, out)
		}
	})
}

// expectBatchResources: the agent reports the node's NodeMetric and the manager publishes batch resources.
func expectBatchResources(t *testing.T, e *Env) {
	t.Helper()
	// The agent reports once its metric cache covers enough of the aggregation window, then the manager publishes.
	last := "nothing read yet"
	e.Eventually(5*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, last + " (then: " + err.Error() + ")"
		}
		nm := &slov1alpha1.NodeMetric{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, nm); err != nil {
			return false, last + " (then NodeMetric: " + err.Error() + ")"
		}
		c := node.Status.Allocatable[slov1alpha1.BatchCPU]
		m := node.Status.Allocatable[slov1alpha1.BatchMemory]
		last = fmt.Sprintf("NodeMetric updated %v; allocatable batch-cpu %s, batch-memory %s", nm.Status.UpdateTime, c.String(), m.String())
		return nm.Status.UpdateTime != nil && m.Value() > 0 && !c.IsZero(), last
	})
}

// expectCABundleKept: after an upgrade the webhook keeps the caBundle the manager injected; helm's server-side apply
// claims every field of the webhook configuration but that one.
func expectCABundleKept(t *testing.T, e *Env) {
	t.Helper()
	vwc, err := e.Clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.Ctx, "gleaner-validating-webhook-configuration", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %s has no caBundle after helm upgrade", w.Name)
		}
	}
	for _, mf := range vwc.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:caBundle"`) && strings.HasPrefix(mf.Manager, "helm") {
			t.Errorf("helm (field manager %s, %s) owns a webhook's caBundle: an upgrade would reset it", mf.Manager, mf.Operation)
		}
	}
}
