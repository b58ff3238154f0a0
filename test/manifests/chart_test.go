package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/chart"
	"github.com/gleaner-sh/gleaner/internal/logging"
	"github.com/gleaner-sh/gleaner/pkg/agent"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// chartDir is the Helm chart, from this package's directory.
var chartDir = filepath.Join(root, "charts", "gleaner")

// helmVar and helm3Var name the helm binaries to use instead of the ones hack/tool.sh builds: Helm 4, which every
// chart test runs, and Helm 3, which TestChartWithHelm3 holds to the same renders.
const (
	helmVar  = "GLEANER_HELM"
	helm3Var = "GLEANER_HELM3"
)

// helmBinary is one helm, found or built once per test binary.
type helmBinary struct {
	tool, envVar string
	once         sync.Once
	path         string
	err          error
}

var (
	helm4Binary = &helmBinary{tool: "helm", envVar: helmVar}
	helm3Binary = &helmBinary{tool: "helm3", envVar: helm3Var}
)

// get returns the binary: $envVar, else hack/tool.sh's (built from the Go module proxy on first use, about 2.5
// minutes on 2 cores). When it cannot be had the test skips, and fails under CI=true.
func (h *helmBinary) get(t *testing.T) string {
	t.Helper()
	h.once.Do(func() {
		if p := os.Getenv(h.envVar); p != "" {
			h.path = p
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), h.tool)
		cmd.Stderr = io.MultiWriter(os.Stderr, &stderr) // says that it builds, and how long that takes
		out, err := cmd.Output()
		if err != nil {
			h.err = fmt.Errorf("hack/tool.sh %s: %w\n%s", h.tool, err, stderr.Bytes())
			return
		}
		h.path = strings.TrimSpace(string(out))
	})
	if h.err != nil {
		ci.Skipf(t, "%s cannot be built: %v", h.tool, h.err)
	}
	return h.path
}

// runHelm runs Helm 4 with args and returns its standard output; a failure's error carries its standard error.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return runHelmBinary(t, helm4Binary.get(t), args...)
}

// runHelmBinary runs the helm binary with args, with its configuration, caches and its Kubernetes client's
// discovery cache in the test's directory: helm keeps them in $HOME unless told otherwise.
func runHelmBinary(t *testing.T, helm string, args ...string) ([]byte, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECACHEDIR="+filepath.Join(home, "kube-cache"))
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s", filepath.Base(helm), strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// render is `helm template` of the chart as release gleaner in namespace, CRDs included, with more helm args
// (values files, --set).
func render(t *testing.T, namespace string, args ...string) built {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "gleaner", chartDir, "--namespace", namespace, "--include-crds"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, "helm template", out)
}

// TestChartLint: `helm lint --strict` passes with the default values and with values unlike every default.
func TestChartLint(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", filepath.Join("testdata", "chart-values.yaml")}, {"-f", filepath.Join(root, "config", "local", "helm-values.yaml")}} {
		if out, err := runHelm(t, append([]string{"lint", "--strict", chartDir, "--namespace", "gleaner-system"}, args...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestChartMatchesKustomize: with its default values the chart renders the objects `kubectl kustomize
// config/default` renders, field by field, but for helm's own labels and hook annotations and the images' tags,
// and as its pre-delete hooks those of config/uninstall; with config/local/helm-values.yaml those of config/local and
// config/local/uninstall, which `gleaner-local --from-chart` installs.
func TestChartMatchesKustomize(t *testing.T) {
	for _, c := range []struct{ dir, uninstall, values string }{
		{"default", "uninstall", ""},
		{"local", filepath.Join("local", "uninstall"), filepath.Join(root, "config", "local", "helm-values.yaml")},
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join(root, "config", c.dir)
			kustomized := build(t, dir)
			kustomized.objects = append(kustomized.objects, build(t, filepath.Join(root, "config", c.uninstall)).objects...)
			var args []string
			if c.values != "" {
				args = []string{"-f", c.values}
			}
			chart := render(t, "gleaner-system", args...)
			for _, d := range compareObjects(t, kustomized, chart) {
				t.Errorf("config/%s and the chart differ: %s", c.dir, d)
			}
		})
	}
}

// TestCompareObjectsReports: the comparison names the object and the field that differ, and an object only one
// side renders, so a real difference fails TestChartMatchesKustomize with a message that says where it is.
func TestCompareObjectsReports(t *testing.T) {
	deployment := func(replicas int64, image string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "gleaner-manager", "namespace": "gleaner-system",
				"labels": map[string]any{"app.kubernetes.io/name": "gleaner-manager", "helm.sh/chart": "gleaner-0.1.0"}},
			"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "manager", "image": image, "args": []any{"--kube-api-qps=30"}}},
			}}},
		}}
	}
	role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "gleaner-new"}}}

	same := compareObjects(t, built{objects: []*unstructured.Unstructured{deployment(1, "gleaner.local/gleaner-manager:dev")}},
		built{objects: []*unstructured.Unstructured{deployment(1, "gleaner.local/gleaner-manager:v1")}})
	if len(same) != 0 {
		t.Errorf("helm's labels, an image tag and a flag at its default are no difference; got %q", same)
	}
	diffs := compareObjects(t, built{objects: []*unstructured.Unstructured{deployment(1, "a/gleaner-manager:dev"), role}},
		built{objects: []*unstructured.Unstructured{deployment(2, "b/gleaner-manager:dev")}})
	want := []string{
		"ClusterRole gleaner-new: kustomize renders it, the chart does not",
		"Deployment gleaner-system/gleaner-manager: .spec.replicas: kustomize 1, chart 2",
		`Deployment gleaner-system/gleaner-manager: .spec.template.spec.containers[name=manager].image: kustomize "a/gleaner-manager", chart "b/gleaner-manager"`,
	}
	if !reflect.DeepEqual(diffs, want) {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(want, "\n"))
	}
}

// helmLabels are the labels the chart puts on its objects that the kustomize tree does not: helm's own.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// objectKey names an object for the comparison: group, kind, namespace and name.
type objectKey struct{ group, kind, namespace, name string }

func (k objectKey) String() string {
	if k.namespace != "" {
		return k.kind + " " + k.namespace + "/" + k.name
	}
	return k.kind + " " + k.name
}

// compareObjects returns the differences between kustomize's objects and the chart's, one line each naming the
// object and the field, after normalizing what may differ: helm's labels, image tags, the order of env and ports,
// probes' named ports, flags given at their default value, and the formatting of JSON in ConfigMaps.
func compareObjects(t *testing.T, kustomized, chart built) []string {
	t.Helper()
	index := func(b built) map[objectKey]map[string]any {
		m := map[objectKey]map[string]any{}
		for _, u := range b.objects {
			u = u.DeepCopy()
			gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
			if err != nil {
				t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
			k := objectKey{gv.Group, u.GetKind(), u.GetNamespace(), u.GetName()}
			if _, dup := m[k]; dup {
				t.Fatalf("%s is rendered twice", k)
			}
			normalize(t, u)
			m[k] = u.Object
		}
		return m
	}
	km, cm := index(kustomized), index(chart)
	var out []string
	for k, ko := range km {
		co, ok := cm[k]
		if !ok {
			out = append(out, k.String()+": kustomize renders it, the chart does not")
			continue
		}
		var d []string
		diffValues("", ko, co, &d)
		for _, line := range d {
			out = append(out, k.String()+": "+line)
		}
	}
	for k := range cm {
		if _, ok := km[k]; !ok {
			out = append(out, k.String()+": the chart renders it, kustomize does not")
		}
	}
	sort.Strings(out)
	return out
}

// dropMetadata removes the keys of u's metadata.field (labels, annotations) that drop says are helm's own, and
// the field when nothing is left.
func dropMetadata(u *unstructured.Unstructured, field string, drop func(string) bool) {
	m, _, _ := unstructured.NestedStringMap(u.Object, "metadata", field)
	for k := range m {
		if drop(k) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", field)
	} else {
		_ = unstructured.SetNestedStringMap(u.Object, m, "metadata", field)
	}
}

// normalize rewrites u in place into the form compareObjects compares.
func normalize(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	dropMetadata(u, "labels", func(k string) bool { return slices.Contains(helmLabels, k) })
	dropMetadata(u, "annotations", func(k string) bool {
		return strings.HasPrefix(k, "helm.sh/hook") || k == "helm.sh/resource-policy"
	})
	if u.GetKind() == "ConfigMap" {
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		for k, v := range data {
			var parsed any
			if json.Unmarshal([]byte(v), &parsed) == nil {
				canonical, _ := json.Marshal(parsed)
				data[k] = string(canonical)
			}
		}
		if data != nil {
			_ = unstructured.SetNestedStringMap(u.Object, data, "data")
		}
	}
	containers, found, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if !found {
		return
	}
	for _, c := range containers {
		c := c.(map[string]any)
		if image, ok := c["image"].(string); ok {
			if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
				c["image"] = image[:i]
			}
		}
		if args, ok := c["args"].([]any); ok {
			c["args"] = canonicalArgs(t, c["name"].(string), args)
		}
		for _, list := range []string{"env", "ports"} {
			if items, ok := c[list].([]any); ok {
				sort.SliceStable(items, func(i, j int) bool {
					return items[i].(map[string]any)["name"].(string) < items[j].(map[string]any)["name"].(string)
				})
			}
		}
		ports := map[string]any{}
		if items, ok := c["ports"].([]any); ok {
			for _, p := range items {
				p := p.(map[string]any)
				ports[p["name"].(string)] = p["containerPort"]
			}
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			if get, ok, _ := unstructured.NestedMap(c, probe, "httpGet"); ok {
				if name, isName := get["port"].(string); isName && ports[name] != nil {
					get["port"] = ports[name]
					_ = unstructured.SetNestedMap(c, get, probe, "httpGet")
				}
			}
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

// canonicalArgs parses a container's args with its binary's flags and returns the flags whose value is not the
// default, as --name=value in name order: flags in another order, or given at their default, are the same
// arguments. Args that do not parse are returned with the error, which then shows in the difference.
func canonicalArgs(t *testing.T, container string, args []any) []any {
	t.Helper()
	fs := chart.FlagSet(container)
	if fs == nil {
		return args
	}
	var strs []string
	for _, a := range args {
		strs = append(strs, fmt.Sprint(a))
	}
	if err := fs.Parse(strs); err != nil {
		return append(args, "(do not parse: "+err.Error()+")")
	}
	out := []any{}
	fs.Visit(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// diffValues appends to out a line for each field under path where k (kustomize's) and c (the chart's) differ.
// List items with a name are named by it in the path.
func diffValues(path string, k, c any, out *[]string) {
	show := func(v any) string {
		if v == nil {
			return "(none)"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch kv := k.(type) {
	case map[string]any:
		cv, ok := c.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: kustomize %s, chart %s", path, show(k), show(c)))
			return
		}
		keys := map[string]bool{}
		for key := range kv {
			keys[key] = true
		}
		for key := range cv {
			keys[key] = true
		}
		sorted := make([]string, 0, len(keys))
		for key := range keys {
			sorted = append(sorted, key)
		}
		sort.Strings(sorted)
		for _, key := range sorted {
			diffValues(path+"."+key, kv[key], cv[key], out)
		}
	case []any:
		cv, ok := c.([]any)
		if !ok || len(cv) != len(kv) {
			*out = append(*out, fmt.Sprintf("%s: kustomize %s, chart %s", path, show(k), show(c)))
			return
		}
		for i := range kv {
			elem := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := kv[i].(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					elem = fmt.Sprintf("%s[name=%s]", path, name)
				}
			}
			diffValues(elem, kv[i], cv[i], out)
		}
	default:
		if !reflect.DeepEqual(k, c) {
			*out = append(*out, fmt.Sprintf("%s: kustomize %s, chart %s", path, show(k), show(c)))
		}
	}
}

// TestChartCoversEveryFlag: every flag of gleaner-manager and gleaner-agent is a key of the chart's
// manager.flags / agent.flags or set by the chart itself, and every key there is a flag, so that an operator can
// set each option from the values and a new flag fails here until values.yaml lists it.
func TestChartCoversEveryFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("charts/gleaner/values.yaml: %v", err)
	}
	for _, component := range chart.Components {
		flags, _, _ := unstructured.NestedMap(values, component, "flags")
		fs := chart.FlagSet(component)
		fs.VisitAll(func(f *pflag.Flag) {
			_, inValues := flags[f.Name]
			set := slices.Contains(chart.SetByTemplates[component], f.Name)
			switch {
			case inValues && set:
				t.Errorf("--%s of gleaner-%s is both in values.yaml's %s.flags and set by the chart's templates", f.Name, component, component)
			case !inValues && !set:
				t.Errorf("--%s of gleaner-%s cannot be set from the chart: add `%s: null  # %s` to %s.flags in charts/gleaner/values.yaml",
					f.Name, component, f.Name, f.DefValue, component)
			}
		})
		for name := range flags {
			if fs.Lookup(name) == nil {
				t.Errorf("charts/gleaner/values.yaml: %s.flags.%s is no flag of gleaner-%s", component, name, component)
			}
		}
		for _, name := range chart.SetByTemplates[component] {
			if fs.Lookup(name) == nil {
				t.Errorf("chart.SetByTemplates: --%s is no flag of gleaner-%s", name, component)
			}
		}
	}
}

// TestChartValuesLand: values unlike every default (testdata/chart-values.yaml) reach the objects: the binaries'
// flags parse into the options they name and validate, and the pods get the images, resources, scheduling
// constraints and host access asked for; the parts turned off are gone; every object is in the release's
// namespace. The API server accepts all of it (server-side apply).
func TestChartValuesLand(t *testing.T) {
	const ns = "colo"
	b := render(t, ns, "-f", filepath.Join("testdata", "chart-values.yaml"))
	expectManagerValues(t, b)
	expectAgentValues(t, b)
	expectClusterValues(t, b, ns)
	expectOptionValues(t, b, ns)
	applyToAPIServer(t, b)
}

// expectManagerValues checks gleaner-manager's part of testdata/chart-values.yaml.
func expectManagerValues(t *testing.T, b built) {
	t.Helper()
	m := b.manager(t)
	mspec := m.Spec.Template.Spec
	mc := mspec.Containers[0]
	mo := manager.NewOptions()
	log := parseArgs(t, "gleaner-manager", mc.Args, mo.AddFlags)
	if err := mo.Validate(); err != nil {
		t.Errorf("gleaner-manager's args %v: %v", mc.Args, err)
	}
	expect(t, "manager -v", log.Verbosity, 4)
	expect(t, "manager --logging-format", log.Format, logging.FormatText)
	expect(t, "manager replicas", *m.Spec.Replicas, int32(2))
	expect(t, "manager image", mc.Image, "registry.example.com/gleaner/manager:v1.2.3")
	expect(t, "manager pull policy", mc.ImagePullPolicy, corev1.PullAlways)
	expect(t, "pull secrets", mspec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}})
	expect(t, "--kube-api-qps", mo.KubeAPIQPS, float32(45))
	expect(t, "--kube-api-burst", mo.KubeAPIBurst, 90)
	expect(t, "--controllers", mo.Controllers, []string{"*", "-nodeslo"})
	expect(t, "--noderesource-workers", mo.NodeResource.Workers, 16)
	expect(t, "--leader-elect-lease-duration", mo.LeaderElection.LeaseDuration, 30*time.Second)
	expect(t, "--leader-elect-renew-deadline", mo.LeaderElection.RenewDeadline, 20*time.Second)
	expect(t, "--leader-elect-retry-period", mo.LeaderElection.RetryPeriod, 4*time.Second)
	expect(t, "--shutdown-timeout", mo.ShutdownTimeout, 20*time.Second)
	expect(t, "--pprof-bind-address (extraArgs)", mo.PprofAddr, "127.0.0.1:6060")
	expect(t, "--metrics-bind-address", mo.MetricsAddr, ":18080")
	expect(t, "--webhook-port", mo.Webhook.Port, 19443)
	expect(t, "--namespace", mo.Namespace, "$(POD_NAMESPACE)")
	expect(t, "manager ports", containerPorts(mc), map[string]int32{"metrics": 18080, "health": 18081, "webhook": 19443})
	expect(t, "manager GOGC", envValue(mc, "GOGC"), "75")
	expect(t, "manager TZ", envValue(mc, "TZ"), "UTC")
	expect(t, "manager sizing", m.Annotations[sizingAnnotation], "small")
	expectResources(t, "manager", mc, "100m", "64Mi", "256Mi")
	expect(t, "manager priority class", mspec.PriorityClassName, "system-cluster-critical")
	expect(t, "manager node selector", mspec.NodeSelector, map[string]string{"node-role.kubernetes.io/control-plane": ""})
	expect(t, "manager tolerations", mspec.Tolerations, []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}})
	if a := mspec.Affinity; a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Errorf("manager affinity: %+v", a)
	}
	expect(t, "manager pod annotations", m.Spec.Template.Annotations, map[string]string{"example.com/owner": "platform"})
	svc := &corev1.Service{}
	b.object(t, "Service", "gleaner-webhook-service", svc)
	expect(t, "webhook Service targetPort", svc.Spec.Ports[0].TargetPort.IntValue(), 19443)
}

// expectAgentValues checks gleaner-agent's part of testdata/chart-values.yaml.
func expectAgentValues(t *testing.T, b built) {
	t.Helper()
	a := b.agent(t)
	aspec := a.Spec.Template.Spec
	ac := aspec.Containers[0]
	ao := agent.NewOptions()
	parseArgs(t, "gleaner-agent", ac.Args, ao.AddFlags)
	ao.NodeName = "from-the-downward-api"
	if err := ao.Validate(); err != nil {
		t.Errorf("gleaner-agent's args %v: %v", ac.Args, err)
	}
	expect(t, "agent image", ac.Image, "registry.example.com/gleaner/gleaner-agent:v1.2.4")
	expect(t, "agent pull policy", ac.ImagePullPolicy, corev1.PullIfNotPresent)
	expect(t, "--qos-plugins", ao.QoSPlugins, []string{"*", "-cpuevict"})
	expect(t, "--qos-plugin-intervals", ao.QoSPluginIntervals, map[string]time.Duration{"memoryevict": 500 * time.Millisecond, "cpusuppress": 2 * time.Second})
	expect(t, "--collector-intervals", ao.CollectorIntervals, map[string]time.Duration{"psi": 10 * time.Second})
	expect(t, "--eviction-rate", ao.Eviction.RatePerMinute, 2.5)
	expect(t, "--eviction-local-kill", ao.Eviction.LocalKill, false)
	expect(t, "--prediction-checkpoint-max-size", ao.Prediction.CheckpointMaxBytes, int64(33554432))
	expect(t, "--prediction-cold-start", ao.Prediction.ColdStart, 12*time.Hour)
	expect(t, "--cgroup-driver", ao.CgroupDriver, "systemd")
	expect(t, "--runtime-reconcile-interval", ao.RuntimeHook.ReconcileInterval, 5*time.Second)
	expect(t, "--runtime-hook", ao.RuntimeHook.Mode, "reconciler")
	expect(t, "--state-dir", ao.StateDir, "/var/lib/gleaner")
	expect(t, "--metrics-bind-address", ao.MetricsAddr, ":19316")
	expect(t, "agent ports", containerPorts(ac), map[string]int32{"metrics": 19316, "health": 19317})
	expect(t, "agent GOGC", envValue(ac, "GOGC"), "30")
	expect(t, "agent sizing", a.Annotations[sizingAnnotation], "custom")
	expectResources(t, "agent", ac, "80m", "96Mi", "384Mi")
	expect(t, "agent maxUnavailable", a.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.String(), "1")
	expect(t, "agent priority class", aspec.PriorityClassName, "system-cluster-critical")
	expect(t, "agent node selector", aspec.NodeSelector, map[string]string{"gleaner.sh/colocation": "true"})
	expect(t, "agent tolerations", aspec.Tolerations, []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}})
	expect(t, "agent pod label", a.Spec.Template.Labels["example.com/tier"], "node")
	expect(t, "agent hostPID", aspec.HostPID, false)
	if caps := ac.SecurityContext.Capabilities; caps == nil || len(caps.Add) != 0 {
		t.Errorf("agent without hostPID still adds capabilities: %+v", caps)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range aspec.Volumes {
		volumes[v.Name] = v
	}
	if _, ok := volumes["nri"]; ok {
		t.Error("the agent mounts the NRI socket's directory with runtimeHook reconciler")
	}
	if v, ok := volumes["resctrl"]; !ok || v.HostPath.Path != "/sys/fs/resctrl" {
		t.Errorf("resctrl: true mounts /sys/fs/resctrl; volumes %v", volumes)
	}
	if v := volumes["state"]; v.HostPath == nil || v.HostPath.Path != "/var/lib/gleaner" {
		t.Errorf("the state volume is not agent.stateDir: %+v", v)
	}
}

// expectClusterValues checks the rest of testdata/chart-values.yaml: the namespace, the SLO ConfigMap, the parts
// turned off, and that every object is in the release's namespace ns.
func expectClusterValues(t *testing.T, b built, ns string) {
	t.Helper()
	nsObj := &corev1.Namespace{}
	b.object(t, "Namespace", ns, nsObj)
	expect(t, "namespace label team", nsObj.Labels["team"], "platform")
	expect(t, "namespace enforce level", nsObj.Labels["pod-security.kubernetes.io/enforce"], "privileged")
	cm := &corev1.ConfigMap{}
	b.object(t, "ConfigMap", "slo-controller-config", cm)
	var colocation struct {
		Enable                     bool `json:"enable"`
		CPUReclaimThresholdPercent int  `json:"cpuReclaimThresholdPercent"`
	}
	if err := json.Unmarshal([]byte(cm.Data["colocation-config"]), &colocation); err != nil || !colocation.Enable || colocation.CPUReclaimThresholdPercent != 55 {
		t.Errorf("slo-controller-config colocation-config %q: %+v, %v", cm.Data["colocation-config"], colocation, err)
	}
	for _, u := range b.objects {
		switch {
		case u.GetKind() == "PriorityClass", u.GetKind() == "ValidatingAdmissionPolicy", u.GetName() == "gleaner-metrics-reader":
			t.Errorf("%s %s is rendered although its values turn it off", u.GetKind(), u.GetName())
		case u.GetNamespace() != "" && u.GetNamespace() != ns && u.GetNamespace() != "default":
			t.Errorf("%s %s is in namespace %s, not the release's", u.GetKind(), u.GetName(), u.GetNamespace())
		}
		if raw, _ := json.Marshal(u.Object); bytes.Contains(raw, []byte("gleaner-system")) {
			t.Errorf("%s %s still names gleaner-system in namespace %s", u.GetKind(), u.GetName(), ns)
		}
	}
}

// TestChartDefaultsInAnotherNamespace: the default values installed in a namespace other than gleaner-system:
// the copied objects (generated RBAC, webhook configuration, admission policies, whose CEL names the service
// accounts) follow the release's namespace, and the API server accepts every object, the policies' expressions
// included.
func TestChartDefaultsInAnotherNamespace(t *testing.T) {
	const ns = "gleaner-chart"
	b := render(t, ns)
	var policies int
	for _, u := range b.objects {
		raw, _ := json.Marshal(u.Object)
		if bytes.Contains(raw, []byte("gleaner-system")) {
			t.Errorf("%s %s still names gleaner-system", u.GetKind(), u.GetName())
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			policies++
			if !bytes.Contains(raw, []byte("system:serviceaccount:"+ns+":")) {
				t.Errorf("ValidatingAdmissionPolicy %s does not name the service accounts of %s", u.GetName(), ns)
			}
		}
	}
	if policies == 0 {
		t.Error("the default values render no ValidatingAdmissionPolicy")
	}
	applyToAPIServer(t, b)
}

// TestChartWithHelm3: most clusters' operators still run Helm 3. With the values every chart test uses, Helm 3
// lints the chart as strictly as Helm 4, renders the same objects field by field, and refuses the same bad values.
func TestChartWithHelm3(t *testing.T) {
	helm3 := helm3Binary.get(t)
	if out, err := runHelmBinary(t, helm3, "version", "--short"); err != nil || !strings.HasPrefix(string(out), "v3.") {
		t.Fatalf("%s is not Helm 3: %s %v", helm3, out, err)
	}
	for _, args := range [][]string{
		nil,
		{"-f", filepath.Join("testdata", "chart-values.yaml")},
		{"-f", filepath.Join(root, "config", "local", "helm-values.yaml")},
		{"--set", "priorityClasses.koordinatorNames=true", "--set", "manager.sizing=xlarge", "--set", "agent.sizing=dense"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if out, err := runHelmBinary(t, helm3, append([]string{"lint", "--strict", chartDir, "--namespace", "gleaner-system"}, args...)...); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
			// Helm 3's template assumes Kubernetes v1.20 unless told, below the chart's kubeVersion.
			out, err := runHelmBinary(t, helm3, append([]string{"template", "gleaner", chartDir, "--namespace", "gleaner-system", "--include-crds", "--kube-version", "v1.36.3"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range compareObjects(t, render(t, "gleaner-system", args...), decode(t, "helm 3 template", out)) {
				t.Errorf("Helm 4 and Helm 3 render differently: %s", d)
			}
		})
	}
	for _, c := range badValues {
		args := []string{"template", "gleaner", chartDir, "--namespace", "gleaner-system", "--kube-version", "v1.36.3"}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		// Helm 3's schema messages are worded like Helm 4's where both use the same validator; the value's path is
		// what both must name.
		if _, err := runHelmBinary(t, helm3, args...); err == nil || !strings.Contains(err.Error(), c.path) {
			t.Errorf("helm 3 --set %v: want an error naming %q, got %v", c.set, c.path, err)
		}
	}
}

// badValues are values the chart refuses: want is Helm 4's message, path what any message must name.
var badValues = []struct {
	set        []string
	want, path string
}{
	{[]string{"manager.sizing=huge"}, `manager.sizing "huge" is not a row of sizing.manager (large, medium, small, xlarge, xxlarge)`, "manager.sizing"},
	{[]string{"agent.sizing=custom"}, `agent.sizing "custom" is not a row of sizing.agent (dense, standard); set agent.resources`, "agent.sizing"},
	// values.schema.json (internal/chart): the values' types, and the flags' names from the binaries
	{[]string{"agent.runtimeHook=cri"}, `at '/agent/runtimeHook': value must be one of 'nri', 'reconciler', 'off'`, "runtimeHook"},
	{[]string{"manager.flags.kube-api-qsp=50"}, `at '/manager/flags': additional properties 'kube-api-qsp' not allowed`, "kube-api-qsp"},
	{[]string{"agent.flags.eviction-burst=many"}, `at '/agent/flags/eviction-burst': got string, want null or integer`, "eviction-burst"},
	{[]string{"agent.flags.prediction-cold-start=1day"}, `at '/agent/flags/prediction-cold-start': '1day' does not match pattern`, "prediction-cold-start"},
	{[]string{"manager.nodeselector.zone=a"}, `at '/manager': additional properties 'nodeselector' not allowed`, "nodeselector"},
	{[]string{"giveBack.timeout=2x"}, `at '/giveBack/timeout': '2x' does not match pattern`, "giveBack"},
	{[]string{"giveBack.timeout=0"}, `at '/giveBack/timeout': got number, want string`, "giveBack"},
	// the ecosystem's options (chart_options_test.go)
	{[]string{"webhook.failurePolicy.nope=Fail"}, `webhook.failurePolicy: "nope" is no webhook of the chart (colocation-profile.config.gleaner.sh, `, "webhook.failurePolicy"},
	{[]string{"webhook.timeoutSeconds=31"}, `at '/webhook/timeoutSeconds'`, "timeoutSeconds"},
	{[]string{"manager.replicas=2", "manager.podDisruptionBudget.minAvailable=1"}, "manager.podDisruptionBudget: set one of minAvailable and maxUnavailable, the other null", "manager.podDisruptionBudget"},
	{[]string{"certManager.enabled=true", "manager.flags.webhook-cert-secret=mine"}, `manager.flags.webhook-cert-secret "mine": with certManager.enabled`, "webhook-cert-secret"},
	{[]string{"rbac.readerRoles=false", "metrics.readerSubjects[0].kind=User", "metrics.readerSubjects[0].name=prom"}, "metrics.readerSubjects binds gleaner-metrics-reader, which rbac.readerRoles=false leaves out", "metrics.readerSubjects"},
}

// TestChartRefusesBadValues: values the chart cannot render say what is wrong and what is allowed: a sizing row
// that is not in the table (the templates), and through values.schema.json a misspelt value or flag, a value of
// the wrong type, and a duration that is none.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range badValues {
		args := []string{"template", "gleaner", chartDir, "--namespace", "gleaner-system"}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		_, err := runHelm(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: want an error saying %q, got %v", c.set, c.want, err)
		}
	}
}

// TestChartSizingMatchesTheTable: each row of docs/operations.md's sizing tables, chosen by manager.sizing or
// agent.sizing, gives the workload that row's resources and names it in gleaner.sh/sizing; the chart's defaults
// are the rows marked (default).
func TestChartSizingMatchesTheTable(t *testing.T) {
	def := render(t, "gleaner-system")
	for _, c := range []struct{ component, heading string }{{"manager", "### gleaner-manager"}, {"agent", "### gleaner-agent"}} {
		table := sizingTable(t, c.heading)
		for name, row := range table {
			b := def
			if !row.isDefault {
				b = render(t, "gleaner-system", "--set", c.component+".sizing="+name)
			}
			var ann map[string]string
			var container corev1.Container
			if c.component == "manager" {
				m := b.manager(t)
				ann, container = m.Annotations, m.Spec.Template.Spec.Containers[0]
			} else {
				a := b.agent(t)
				ann, container = a.Annotations, a.Spec.Template.Spec.Containers[0]
			}
			if got := expectRow(t, "the chart's gleaner-"+c.component+" with sizing "+name, ann, container, table); got.name != name {
				t.Errorf("the chart's gleaner-%s with sizing %s claims row %s", c.component, name, got.name)
			}
		}
	}
}

// parseArgs parses args with the flags addFlags binds and the log flags the binaries' mains add, failing t with
// what cannot be parsed or does not validate; it returns the log options.
func parseArgs(t *testing.T, binary string, args []string, addFlags func(*pflag.FlagSet)) *logging.Options {
	t.Helper()
	fs := pflag.NewFlagSet(binary, pflag.ContinueOnError)
	addFlags(fs)
	log := logging.NewOptions()
	log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s's args %v: %v", binary, args, err)
	}
	if err := log.Validate(); err != nil {
		t.Errorf("%s's args %v: %v", binary, args, err)
	}
	return log
}

func expect[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func containerPorts(c corev1.Container) map[string]int32 {
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	return ports
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func expectResources(t *testing.T, what string, c corev1.Container, cpu, memory, memoryLimit string) {
	t.Helper()
	for _, q := range []struct {
		list  corev1.ResourceList
		name  corev1.ResourceName
		value string
	}{{c.Resources.Requests, corev1.ResourceCPU, cpu}, {c.Resources.Requests, corev1.ResourceMemory, memory}, {c.Resources.Limits, corev1.ResourceMemory, memoryLimit}} {
		if got := q.list[q.name]; got.Cmp(resource.MustParse(q.value)) != 0 {
			t.Errorf("%s %s: got %s, want %s", what, q.name, got.String(), q.value)
		}
	}
}

// applyToAPIServer applies every object of b to the package's API server (kubectl apply --server-side), CRDs
// first, those of other projects whose kinds b renders among them (crdsOf), and established before the rest: the
// API server's validation, admission and CEL compilation accept the chart's objects as rendered.
func applyToAPIServer(t *testing.T, b built) {
	t.Helper()
	e := env.Start(t)
	var crds, rest bytes.Buffer
	var crdNames []string
	for _, u := range append(crdsOf(t, b), b.objects...) {
		if u.GetKind() == "CustomResourceDefinition" {
			crdNames = append(crdNames, "crd/"+u.GetName())
		}
		raw, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		dst := &rest
		if u.GetKind() == "CustomResourceDefinition" {
			dst = &crds
		}
		dst.WriteString("---\n")
		dst.Write(raw)
	}
	for _, doc := range []*bytes.Buffer{&crds, &rest} {
		cmd := e.Kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=chart-test", "-f", "-")
		cmd.Stdin = doc
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply --server-side of the chart's objects: %v\n%s", err, out)
		}
		if doc == &crds && len(crdNames) > 0 {
			if out, err := e.Kubectl(append([]string{"wait", "--for=condition=Established", "--timeout=1m"}, crdNames...)...).CombinedOutput(); err != nil {
				t.Fatalf("the CRDs are not established: %v\n%s", err, out)
			}
		}
	}
	t.Cleanup(func() {
		// The chart's cluster-wide objects stay: they are config/default's under the same names; its namespace goes.
		for _, u := range b.objects {
			if u.GetKind() == "Namespace" {
				_ = e.Kubectl("delete", "namespace", u.GetName(), "--wait=false").Run()
			}
		}
	})
	var ds appsv1.DaemonSet
	b.object(t, "DaemonSet", "gleaner-agent", &ds)
	out, err := e.Kubectl("get", "daemonset", "-n", ds.Namespace, "gleaner-agent", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "daemonset.apps/gleaner-agent" {
		t.Errorf("the applied DaemonSet cannot be read back: %v\n%s", err, out)
	}
}

// TestChartKoordinatorPriorityClasses: with priorityClasses.koordinatorNames the chart adds Koordinator's
// koord-prod, koord-mid, koord-batch and koord-free, and a pod of each class lands in the band of its name, as
// with Gleaner's own classes; by default it makes Gleaner's only, as config/default does.
func TestChartKoordinatorPriorityClasses(t *testing.T) {
	classes := func(b built) map[string]schedulingv1.PriorityClass {
		m := map[string]schedulingv1.PriorityClass{}
		for _, u := range b.objects {
			if u.GetKind() == "PriorityClass" {
				var pc schedulingv1.PriorityClass
				b.object(t, "PriorityClass", u.GetName(), &pc)
				m[pc.Name] = pc
			}
		}
		return m
	}
	if names := slices.Sorted(maps.Keys(classes(render(t, "gleaner-system")))); !reflect.DeepEqual(names, []string{"gleaner-batch", "gleaner-free", "gleaner-mid", "gleaner-prod"}) {
		t.Errorf("default priority classes: %v", names)
	}
	got := classes(render(t, "gleaner-system", "--set", "priorityClasses.koordinatorNames=true"))
	for _, band := range []slov1alpha1.PriorityClass{slov1alpha1.PriorityProd, slov1alpha1.PriorityMid, slov1alpha1.PriorityBatch, slov1alpha1.PriorityFree} {
		for _, prefix := range []string{"gleaner-", "koord-"} {
			pc, ok := got[prefix+string(band)]
			if !ok {
				t.Errorf("no PriorityClass %s%s", prefix, band)
				continue
			}
			pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: pc.Name, Priority: &pc.Value}}
			if c := slov1alpha1.ClassOf(pod); c.Priority != band {
				t.Errorf("a pod of PriorityClass %s (%d) is %s, want %s", pc.Name, pc.Value, c.Priority, band)
			}
			if other := got["gleaner-"+string(band)]; pc.Value != other.Value || !reflect.DeepEqual(pc.PreemptionPolicy, other.PreemptionPolicy) {
				t.Errorf("%s differs from gleaner-%s: %d %v, %d %v", pc.Name, band, pc.Value, pc.PreemptionPolicy, other.Value, other.PreemptionPolicy)
			}
		}
	}
}

// TestChartAsASubchart: an umbrella chart that lists gleaner as a dependency and sets global values (Helm hands them
// to every subchart) lints, and renders the objects the chart renders on its own, with Helm 4 and Helm 3. The
// umbrella's own values for the subchart land as the chart's values do, the ServiceMonitors and PrometheusRule
// among them (TestChartMetrics validates those against prometheus-operator's CRDs).
func TestChartAsASubchart(t *testing.T) {
	umbrella := t.TempDir()
	if err := os.CopyFS(filepath.Join(umbrella, "charts", "gleaner"), os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(umbrella, "templates"), 0o755); err != nil { // lint --strict wants one
		t.Fatal(err)
	}
	chart := `apiVersion: v2
name: platform
version: 1.0.0
dependencies:
  - name: gleaner
    version: ">=0.0.0-0"
    repository: file://charts/gleaner
`
	values := `global:
  imageRegistry: registry.example.com
  storageClass: fast
gleaner:
  manager:
    replicas: 3
  metrics:
    serviceMonitor:
      enabled: true
    prometheusRule:
      enabled: true
`
	for name, text := range map[string]string{"Chart.yaml": chart, "values.yaml": values} {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := render(t, "gleaner-system", "--set", "manager.replicas=3", "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true")
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if !slices.ContainsFunc(want.objects, func(u *unstructured.Unstructured) bool { return u.GetKind() == kind }) {
			t.Errorf("the chart renders no %s with metrics.serviceMonitor and metrics.prometheusRule", kind)
		}
	}
	for _, h := range []struct {
		name  string
		bin   *helmBinary
		extra []string
	}{
		{"helm 4", helm4Binary, nil},
		// Helm 3's template assumes Kubernetes v1.20 unless told, below the chart's kubeVersion.
		{"helm 3", helm3Binary, []string{"--kube-version", "v1.36.3"}},
	} {
		t.Run(h.name, func(t *testing.T) {
			bin := h.bin.get(t)
			if out, err := runHelmBinary(t, bin, "lint", "--strict", umbrella, "--namespace", "gleaner-system"); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
			out, err := runHelmBinary(t, bin, append([]string{"template", "gleaner", umbrella, "--namespace", "gleaner-system", "--include-crds"}, h.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			got := decode(t, h.name+" template of the umbrella chart", out)
			for _, d := range compareObjects(t, want, got) {
				t.Errorf("the chart alone and as a subchart render differently: %s", d)
			}
		})
	}
}
