package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
)

// manifests is the agent's DaemonSet; rbacManifests are its service account, binding and generated ClusterRole.
const manifests = "../../config/agent"

var rbacManifests = []string{
	"../../config/rbac/agent_service_account.yaml", "../../config/rbac/agent_role_binding.yaml", "../../config/rbac/agent/role.yaml",
	"../../config/rbac/metrics_auth_role.yaml",
}

// TestDaemonSetManifest checks the DaemonSet against the agent itself: its arguments parse and validate with the
// agent's flags, the node name comes from the downward API, the probes hit the configured ports, the only host paths
// are the cgroup tree where --cgroup-root points, /proc/sys/vm under --sysctl-root, the state directory, the NRI
// socket's directory and the kubelet's pod-resources directory, and the privileges are exactly those the QoS plugins, the evictor and the runtime hook
// need.
func TestDaemonSetManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(manifests, "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.UnmarshalStrict(b, ds); err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	o := NewOptions()
	if err := newFlagSet(o).Parse(c.Args); err != nil {
		t.Fatalf("the manifest's args do not parse: %v", err)
	}
	if len(c.Env) == 0 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME must come from spec.nodeName: %+v", c.Env)
	}
	fromField := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fromField[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if fromField["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE must come from metadata.namespace, or an uninstall cannot be told from a restart: %+v", c.Env)
	}
	if o.Uninstall.DaemonSet != ds.Name {
		t.Errorf("--daemonset %q is not the DaemonSet's name %q: an uninstall would never be seen", o.Uninstall.DaemonSet, ds.Name)
	}
	o.NodeName = "from-the-downward-api"
	if err := o.Validate(); err != nil {
		t.Errorf("the manifest's options are invalid: %v", err)
	}
	expectProbesAndMounts(t, spec, o)
}

// expectProbesAndMounts checks the DaemonSet's ports, probes and host access against the options it sets.
func expectProbesAndMounts(t *testing.T, spec corev1.PodSpec, o *Options) {
	t.Helper()
	c := spec.Containers[0]
	ports := map[string]string{}
	for _, p := range c.Ports {
		ports[p.Name] = ":" + itoa(p.ContainerPort)
	}
	if ports["metrics"] != o.MetricsAddr || ports["health"] != o.HealthAddr {
		t.Errorf("ports %v do not match --metrics-bind-address %s and --health-probe-bind-address %s", ports, o.MetricsAddr, o.HealthAddr)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: %+v %+v", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	expectHostAccess(t, spec, o)
}

// expectHostAccess checks the DaemonSet's host paths, mounts and privileges against the options it sets.
func expectHostAccess(t *testing.T, spec corev1.PodSpec, o *Options) {
	t.Helper()
	c := spec.Containers[0]
	hostPaths := map[string]string{} // volume name -> host path
	var paths []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
			paths = append(paths, v.HostPath.Path)
		}
	}
	// The cgroup tree, the vm sysctls (not all of /proc/sys), the state directory, with the NRI runtime hook
	// the directory of the runtime's NRI socket, and the directory of the kubelet's pod-resources socket.
	want := []string{"/sys/fs/cgroup", "/proc/sys/vm", o.StateDir}
	if o.RuntimeHook.Mode == string(runtimehook.ModeNRI) {
		want = append(want, filepath.Dir(o.RuntimeHook.NRISocket))
	}
	podResources := filepath.Dir(kubeletpolicy.Socket(o.Devices.KubeletRootDir))
	want = append(want, podResources)
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("host paths = %v, want only %v", paths, want)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[hostPaths[m.Name]] = m
	}
	expectMounts(t, mounts, o, podResources)
	if len(c.VolumeMounts) != len(want) {
		t.Errorf("volume mounts %+v: want one per host path %v", c.VolumeMounts, want)
	}
	expectPrivileges(t, spec, o)
}

// expectMounts checks each host path's mount (by host path) against the options that read it.
func expectMounts(t *testing.T, mounts map[string]corev1.VolumeMount, o *Options, podResources string) {
	t.Helper()
	// Writable: the executor writes best-effort limits.
	if m, ok := mounts["/sys/fs/cgroup"]; !ok || m.ReadOnly || m.MountPath != o.CgroupRoot {
		t.Errorf("the cgroup tree must be mounted writable at --cgroup-root %s: %+v", o.CgroupRoot, mounts)
	}
	// Writable: sysreconcile writes vm sysctls under --sysctl-root, and records the values it replaced in --state-dir.
	if m, ok := mounts["/proc/sys/vm"]; !ok || m.ReadOnly || m.MountPath != filepath.Join(o.SysctlRoot, "vm") {
		t.Errorf("/proc/sys/vm must be mounted writable at --sysctl-root %s/vm: %+v", o.SysctlRoot, mounts)
	}
	if m, ok := mounts[o.StateDir]; !ok || m.ReadOnly || m.MountPath != o.StateDir {
		t.Errorf("the state directory must be mounted writable at --state-dir %s: %+v", o.StateDir, mounts)
	}
	// Read-only, at the host's own path (the socket's path is the same inside), the directory rather than the
	// socket file (containerd creates a new socket when it restarts).
	if o.RuntimeHook.Mode == string(runtimehook.ModeNRI) {
		dir := filepath.Dir(o.RuntimeHook.NRISocket)
		if m, ok := mounts[dir]; !ok || !m.ReadOnly || m.MountPath != dir {
			t.Errorf("the NRI socket's directory %s must be mounted read-only at the same path: %+v", dir, mounts)
		}
	}
	// Read-only, at the same path under --kubelet-root-dir: the topology reporter only asks the kubelet's policies.
	if m, ok := mounts[podResources]; !ok || !m.ReadOnly || m.MountPath != podResources {
		t.Errorf("the kubelet's pod-resources directory %s must be mounted read-only at the same path (--kubelet-root-dir %s): %+v", podResources, o.Devices.KubeletRootDir, mounts)
	}
}

// expectPrivileges checks the DaemonSet's security context and host namespaces.
func expectPrivileges(t *testing.T, spec corev1.PodSpec, o *Options) {
	t.Helper()
	sc := spec.Containers[0].SecurityContext
	if spec.HostNetwork || (sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("the agent asks for host namespaces or privileges it does not need")
	}
	// Root, for root-owned cgroup files; of the capabilities only KILL, and host pids, for the local last resort,
	// and SYS_RESOURCE and DAC_OVERRIDE for the OOM order (docs/security.md lists each with its feature).
	caps := sc.Capabilities
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || caps == nil || fmt.Sprint(caps.Drop) != "[ALL]" || fmt.Sprint(caps.Add) != "[KILL SYS_RESOURCE DAC_OVERRIDE]" {
		t.Errorf("security context %+v: want root with every capability dropped but KILL, SYS_RESOURCE and DAC_OVERRIDE", sc)
	}
	// The runtime's default seccomp filter: nothing the agent calls is in what it blocks.
	if psc := spec.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("the pod's seccompProfile must be RuntimeDefault: %+v", spec.SecurityContext)
	}
	if spec.HostPID != o.Eviction.LocalKill {
		t.Errorf("hostPID is %v with --eviction-local-kill=%v: the v1 local kill needs the host's pids, nothing else does", spec.HostPID, o.Eviction.LocalKill)
	}
}

// daemonSetEnv is the plain-value environment the DaemonSet gives the agent (GOGC and the like), for benchmarks
// that run the binary as the DaemonSet would.
func daemonSetEnv(tb testing.TB) []string {
	b, err := os.ReadFile(filepath.Join(manifests, "daemonset.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.UnmarshalStrict(b, ds); err != nil {
		tb.Fatal(err)
	}
	var env []string
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return env
}

// TestAgentRunsWithItsRBAC installs the agent's RBAC manifests into the API server and runs the whole agent as its service
// account: with only the generated ClusterRole it must sync and write its NodeMetric status.
func TestAgentRunsWithItsRBAC(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	files := []string{}
	for _, f := range rbacManifests {
		files = append(files, "-f", f)
	}
	if out, err := e.Kubectl(append([]string{"apply"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply %v: %v\n%s", rbacManifests, err, out)
	}
	t.Cleanup(func() { _ = e.Kubectl(append([]string{"delete", "--wait=false"}, files...)...).Run() })
	cfg, err := e.UserConfig("system:serviceaccount:gleaner-system:gleaner-agent", "system:serviceaccounts", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}

	const nodeName = "rbac-node"
	host, _, _ := simulatedHost(t, e, nodeName)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	o := NewOptions()
	o.NodeName, o.ProcRoot, o.SysRoot, o.CgroupRoot = nodeName, host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), t.TempDir()
	o.MetricsAddr, o.HealthAddr = freeAddr(t), freeAddr(t)
	a, done := startAgent(t, cfg, o, clk)
	nm := reportAfter(t, e, done, a, host, clk, nodeName)
	// Its metrics server asks the API server about scrapers with the agent's own rights (metrics_auth_role.yaml).
	waitScrape(t, done, "https://"+o.MetricsAddr+"/metrics", boundToken(t, e, "prometheus", "gleaner-metrics-reader"), "gleaner_agent_nodemetric_reports_total")

	// And nothing more: the service account cannot touch other kinds or write NodeMetric specs.
	sa, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets as the agent: want forbidden, got %v", err)
	}
	nm.Spec.CollectPolicy.ReportIntervalSeconds = nil
	if err := sa.Update(ctx, nm); !apierrors.IsForbidden(err) {
		t.Errorf("updating a NodeMetric spec as the agent: want forbidden, got %v", err)
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
