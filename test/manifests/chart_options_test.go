package manifests

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/ci"
)

// The CRDs of the projects whose kinds the chart renders on request (metrics.serviceMonitor,
// metrics.prometheusRule, certManager), from their Go modules at pinned versions: applyToAPIServer installs them
// before the chart's objects, so the API server validates those objects against the projects' own schemas.
var thirdPartyCRDs = map[string]struct{ module, dir string }{
	"monitoring.coreos.com": {"github.com/prometheus-operator/prometheus-operator@v0.80.1", "example/prometheus-operator-crd"},
	// cert-manager's CRDs are its chart's templates: the directives are in YAML comments and label values,
	// which crdsOf drops.
	"cert-manager.io": {"github.com/cert-manager/cert-manager@v1.16.2", "deploy/crds"},
}

var moduleDirs sync.Map // module@version: its directory in the module cache

// moduleDir returns the directory of module@version in the module cache, downloaded through the Go module proxy on
// first use; the test skips (fails under CI=true) where it cannot be had.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	if d, ok := moduleDirs.Load(module); ok {
		return d.(string)
	}
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = t.TempDir() // outside the repository's module: the version is the one named here
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		ci.Skipf(t, "go mod download %s: %v %s", module, err, info.Error)
	}
	moduleDirs.Store(module, info.Dir)
	return info.Dir
}

// crdsOf returns the CRDs b's objects of other projects' groups need, labels and annotations dropped.
func crdsOf(t *testing.T, b built) []*unstructured.Unstructured {
	t.Helper()
	groups := map[string]bool{}
	for _, u := range b.objects {
		groups[u.GroupVersionKind().Group] = true
	}
	var out []*unstructured.Unstructured
	for group, src := range thirdPartyCRDs {
		if !groups[group] {
			continue
		}
		dir := filepath.Join(moduleDir(t, src.module), src.dir)
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no CRDs in %s: %v", src.module, src.dir, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range decode(t, f, raw).objects {
				if u.GetKind() != "CustomResourceDefinition" {
					continue
				}
				u.SetLabels(nil)
				u.SetAnnotations(nil)
				out = append(out, u)
			}
		}
	}
	return out
}

// chartObject returns b's object of kind and name, failing t where there is none.
func chartObject(t *testing.T, b built, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range b.objects {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
	return nil
}

func hasObject(b built, kind, name string) bool {
	for _, u := range b.objects {
		if u.GetKind() == kind && u.GetName() == name {
			return true
		}
	}
	return false
}

// rulesFile is the alerting rules the repository ships (test/monitoring runs them on a real Prometheus).
var rulesFile = filepath.Join(root, "config", "monitoring", "gleaner-rules.yaml")

// TestChartRulesInStep: the chart's copy of the alerting rules (make generate) is config/monitoring's file.
func TestChartRulesInStep(t *testing.T) {
	want, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, "files", "monitoring", "gleaner-rules.yaml"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("charts/gleaner/files/monitoring/gleaner-rules.yaml is not config/monitoring/gleaner-rules.yaml (%v): run make generate", err)
	}
}

// TestChartMetrics: metrics.serviceMonitor and metrics.prometheusRule render Services on the containers' metrics
// ports, ServiceMonitors that select them alone and give the jobs the shipped alerts name (HTTPS with the
// scraper's token where the binary serves HTTPS, HTTP where flags.metrics-secure is false; each agent's series
// labelled with its node), a PrometheusRule with the shipped rules' groups unchanged, and the reader binding; the
// API server accepts them against prometheus-operator's CRDs. By default none of it is rendered.
func TestChartMetrics(t *testing.T) {
	for _, u := range render(t, "gleaner-system").objects {
		if u.GetAPIVersion() == "monitoring.coreos.com/v1" || strings.HasSuffix(u.GetName(), "-metrics") && u.GetKind() == "Service" {
			t.Errorf("the default values render %s %s", u.GetKind(), u.GetName())
		}
	}
	const ns = "gleaner-metrics" // applyToAPIServer's cleanup deletes it
	b := render(t, ns, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
		"--set", "metrics.serviceMonitor.interval=30s", "--set-json", `metrics.serviceMonitor.labels={"release":"kube-prometheus-stack"}`,
		"--set-json", `metrics.readerSubjects=[{"kind":"ServiceAccount","name":"prometheus-k8s","namespace":"monitoring"}]`)

	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]bool{}
	for _, m := range regexp.MustCompile(`job="([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		jobs[m[1]] = false
	}
	webhook := &corev1.Service{}
	b.object(t, "Service", "gleaner-webhook-service", webhook)
	for _, c := range []struct {
		name string
		pod  corev1.PodTemplateSpec
	}{{"gleaner-manager", b.manager(t).Spec.Template}, {"gleaner-agent", b.agent(t).Spec.Template}} {
		expectScraped(t, b, ns, c.name, c.pod, webhook, jobs)
	}
	for job, scraped := range jobs {
		if !scraped {
			t.Errorf("the alerts name job %q, which no ServiceMonitor gives", job)
		}
	}

	var shipped struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &shipped); err != nil {
		t.Fatal(err)
	}
	rule := chartObject(t, b, "PrometheusRule", "gleaner")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(shipped.Groups) == 0 || !reflect.DeepEqual(groups, shipped.Groups) {
		t.Errorf("PrometheusRule gleaner's groups are not those of config/monitoring/gleaner-rules.yaml")
	}

	crb := &rbacv1.ClusterRoleBinding{}
	b.object(t, "ClusterRoleBinding", "gleaner-metrics-reader", crb)
	if crb.RoleRef.Name != "gleaner-metrics-reader" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "prometheus-k8s" {
		t.Errorf("ClusterRoleBinding gleaner-metrics-reader: %+v %+v", crb.RoleRef, crb.Subjects)
	}

	expectPlainAndServiceOnly(t)
	applyToAPIServer(t, b)
}

// expectPlainAndServiceOnly: a ServiceMonitor scrapes over plain HTTP where the binary serves it so, and
// metrics.service alone renders the Services without ServiceMonitors.
func expectPlainAndServiceOnly(t *testing.T) {
	t.Helper()
	// Plain HTTP where the binary serves it so: no scheme https, no token.
	plain := render(t, "gleaner-system", "--set", "metrics.serviceMonitor.enabled=true", "--set", "manager.flags.metrics-secure=false")
	ep, _, _ := unstructured.NestedSlice(chartObject(t, plain, "ServiceMonitor", "gleaner-manager").Object, "spec", "endpoints")
	if e := ep[0].(map[string]any); e["scheme"] != "http" || e["bearerTokenFile"] != nil || e["tlsConfig"] != nil {
		t.Errorf("with manager.flags.metrics-secure=false the manager's endpoint is %v, want http without TLS or token", e)
	}
	// metrics.service alone: the Services, no ServiceMonitor.
	services := render(t, "gleaner-system", "--set", "metrics.service.enabled=true")
	if !hasObject(services, "Service", "gleaner-agent-metrics") || hasObject(services, "ServiceMonitor", "gleaner-agent") {
		t.Error("metrics.service.enabled renders the metrics Services without ServiceMonitors")
	}
}

// serviceMonitorSpec is the part of a ServiceMonitor's spec TestChartMetrics reads.
type serviceMonitorSpec struct {
	JobLabel string `json:"jobLabel"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	NamespaceSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"namespaceSelector"`
	Endpoints []struct {
		Port, Path, Scheme, Interval, BearerTokenFile string
		HonorLabels                                   bool
		TLSConfig                                     map[string]any `json:"tlsConfig"`
		Relabelings                                   []relabeling   `json:"relabelings"`
	} `json:"endpoints"`
}

// relabeling is the part of a ServiceMonitor endpoint's relabeling TestChartMetrics reads.
type relabeling struct {
	SourceLabels []string `json:"sourceLabels"`
	TargetLabel  string   `json:"targetLabel"`
}

// expectScraped checks the metrics Service and ServiceMonitor of component name (its pods' template pod) in b,
// rendered into ns, and marks the job it gives in jobs (the alerts' jobs; one it does not name is an error).
func expectScraped(t *testing.T, b built, ns, name string, pod corev1.PodTemplateSpec, webhook *corev1.Service, jobs map[string]bool) {
	t.Helper()
	svc := &corev1.Service{}
	b.object(t, "Service", name+"-metrics", svc)
	port := containerPorts(pod.Spec.Containers[0])["metrics"]
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
		t.Errorf("Service %s ports %+v, want %d to the container's port metrics", svc.Name, svc.Spec.Ports, port)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("Service %s selects %v, not %s's pods %v", svc.Name, svc.Spec.Selector, name, pod.Labels)
	}

	sm := chartObject(t, b, "ServiceMonitor", name)
	var spec serviceMonitorSpec
	fromMap(t, sm.Object["spec"], &spec)
	sel := labels.SelectorFromSet(spec.Selector.MatchLabels)
	if !sel.Matches(labels.Set(svc.Labels)) || sel.Matches(labels.Set(webhook.Labels)) {
		t.Errorf("ServiceMonitor %s selects %v: want %s's metrics Service %v and not the webhook's %v", name, spec.Selector.MatchLabels, name, svc.Labels, webhook.Labels)
	}
	expect(t, "ServiceMonitor "+name+" namespaces", spec.NamespaceSelector.MatchNames, []string{ns})
	job := svc.Labels[spec.JobLabel]
	if _, named := jobs[job]; !named {
		t.Errorf("ServiceMonitor %s gives job %q (label %q), which no alert names (%v)", name, job, spec.JobLabel, jobs)
	}
	jobs[job] = true
	expect(t, "ServiceMonitor "+name+" release label", sm.GetLabels()["release"], "kube-prometheus-stack")
	if len(spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor %s endpoints: %+v", name, spec.Endpoints)
	}
	e := spec.Endpoints[0]
	if e.Port != "metrics" || e.Path != "/metrics" || e.Scheme != "https" || !e.HonorLabels || e.Interval != "30s" ||
		e.TLSConfig["insecureSkipVerify"] != true || e.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("ServiceMonitor %s endpoint %+v: want port metrics, /metrics over https with the service account's token, the chart's tlsConfig and interval, honorLabels", name, e)
	}
	nodeLabel := slices.ContainsFunc(e.Relabelings, func(r relabeling) bool {
		return r.TargetLabel == "node" && reflect.DeepEqual(r.SourceLabels, []string{"__meta_kubernetes_pod_node_name"})
	})
	if want := name == "gleaner-agent"; nodeLabel != want {
		t.Errorf("ServiceMonitor %s labels the target with its pod's node: %v, want %v (the manager's series carry their own)", name, nodeLabel, want)
	}
}

// fromMap converts an unstructured value into into, by JSON.
func fromMap(t *testing.T, v, into any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatal(err)
	}
}

// webhooks returns the failure policy and timeout of every webhook of both configurations, by name.
func webhooks(t *testing.T, b built) map[string]string {
	t.Helper()
	out := map[string]string{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	b.object(t, "ValidatingWebhookConfiguration", "gleaner-validating-webhook-configuration", v)
	for _, w := range v.Webhooks {
		out[w.Name] = fmt.Sprintf("%s %d", *w.FailurePolicy, ptr.Deref(w.TimeoutSeconds, 0))
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	b.object(t, "MutatingWebhookConfiguration", "gleaner-mutating-webhook-configuration", m)
	for _, w := range m.Webhooks {
		out[w.Name] = fmt.Sprintf("%s %d", *w.FailurePolicy, ptr.Deref(w.TimeoutSeconds, 0))
	}
	return out
}

// TestChartWebhookOptions: webhook.failurePolicy sets the policy of the webhooks it names and leaves the others at
// config/webhook's; webhook.timeoutSeconds sets every webhook's timeout; by default both are config/webhook's.
func TestChartWebhookOptions(t *testing.T) {
	defaults := map[string]string{
		"slo-controller-config.slo.gleaner.sh":        "Fail 5",
		"slo-controller-config-delete.slo.gleaner.sh": "Ignore 5",
		"colocation-profile.config.gleaner.sh":        "Ignore 5",
		"node-amplification.slo.gleaner.sh":           "Ignore 5",
	}
	expect(t, "the default webhooks", webhooks(t, render(t, "gleaner-system")), defaults)
	got := webhooks(t, render(t, "gleaner-system", "--set-json",
		`webhook.failurePolicy={"colocation-profile.config.gleaner.sh":"Fail","slo-controller-config.slo.gleaner.sh":"Ignore"}`,
		"--set", "webhook.timeoutSeconds=12"))
	expect(t, "the webhooks with webhook.*", got, map[string]string{
		"slo-controller-config.slo.gleaner.sh":        "Ignore 12",
		"slo-controller-config-delete.slo.gleaner.sh": "Ignore 12",
		"colocation-profile.config.gleaner.sh":        "Fail 12",
		"node-amplification.slo.gleaner.sh":           "Ignore 12",
	})
}

// TestChartManagerAvailability: the manager's PodDisruptionBudget by replicas or podDisruptionBudget.enabled,
// selecting its pods; topologySpreadConstraints without a labelSelector get the manager's pods'; podSecurityContext
// replaces the pod's; extraVolumes and extraVolumeMounts land in both pods beside the chart's own.
func TestChartManagerAvailability(t *testing.T) {
	for _, c := range []struct {
		name string
		set  []string
		want bool
	}{
		{"one replica", nil, false},
		{"two replicas", []string{"manager.replicas=2"}, true},
		{"two replicas, off", []string{"manager.replicas=2", "manager.podDisruptionBudget.enabled=false"}, false},
		{"one replica, on", []string{"manager.podDisruptionBudget.enabled=true"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			b := render(t, "gleaner-system", args...)
			if got := hasObject(b, "PodDisruptionBudget", "gleaner-manager"); got != c.want {
				t.Fatalf("PodDisruptionBudget gleaner-manager rendered: %v, want %v", got, c.want)
			}
			if !c.want {
				return
			}
			pdb := &policyv1.PodDisruptionBudget{}
			b.object(t, "PodDisruptionBudget", "gleaner-manager", pdb)
			if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
				t.Errorf("PodDisruptionBudget gleaner-manager: %+v, want maxUnavailable 1", pdb.Spec)
			}
			if !labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(b.manager(t).Spec.Template.Labels)) {
				t.Errorf("PodDisruptionBudget gleaner-manager selects %v, not the manager's pods", pdb.Spec.Selector)
			}
		})
	}
	b := render(t, "gleaner-system", "--set", "manager.replicas=3", "--set", "manager.podDisruptionBudget.maxUnavailable=null",
		"--set", "manager.podDisruptionBudget.minAvailable=50%")
	pdb := &policyv1.PodDisruptionBudget{}
	b.object(t, "PodDisruptionBudget", "gleaner-manager", pdb)
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromString("50%") || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget gleaner-manager with minAvailable 50%%: %+v", pdb.Spec)
	}
}

// TestChartNamespaceKept: the Namespace the chart renders survives helm uninstall, and an upgrade that stops
// rendering it (helm.sh/resource-policy: keep); with namespace.create=false there is none.
func TestChartNamespaceKept(t *testing.T) {
	ns := render(t, "gleaner-system").namespace(t)
	expect(t, "the Namespace's helm.sh/resource-policy", ns.Annotations["helm.sh/resource-policy"], "keep")
	if hasObject(render(t, "gleaner-system", "--set", "namespace.create=false"), "Namespace", "gleaner-system") {
		t.Error("namespace.create=false renders the Namespace")
	}
}

// TestChartCertManager: certManager.enabled renders a self-signed Issuer (or uses issuerRef) and a Certificate for
// every name of the webhook Service into the Secret the manager's certificate volume mounts, the manager runs with
// --webhook-cert-secret="" (and makes no certificate), and both webhook configurations ask cert-manager's
// cainjector for that Certificate's CA; the API server accepts it all against cert-manager's CRDs.
func TestChartCertManager(t *testing.T) {
	if b := render(t, "gleaner-system"); hasObject(b, "Certificate", "gleaner-webhook") {
		t.Error("the default values render a Certificate")
	}
	for _, c := range []struct {
		name, ns   string // each its namespace: applyToAPIServer's cleanup deletes it
		set        []string
		issuerKind string
		selfSigned bool
	}{
		{"self-signed", "gleaner-cm", nil, "Issuer", true},
		{"issuerRef", "gleaner-cm-issuer", []string{"--set", "certManager.issuerRef.name=corp-ca", "--set", "certManager.issuerRef.kind=ClusterIssuer"}, "ClusterIssuer", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := c.ns
			b := render(t, ns, append([]string{"--set", "certManager.enabled=true"}, c.set...)...)
			if got := hasObject(b, "Issuer", "gleaner-selfsigned"); got != c.selfSigned {
				t.Errorf("Issuer gleaner-selfsigned rendered: %v, want %v", got, c.selfSigned)
			}
			cert := chartObject(t, b, "Certificate", "gleaner-webhook")
			var spec struct {
				SecretName string            `json:"secretName"`
				DNSNames   []string          `json:"dnsNames"`
				IssuerRef  map[string]string `json:"issuerRef"`
			}
			fromMap(t, cert.Object["spec"], &spec)
			svc := "gleaner-webhook-service"
			for _, name := range []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"} {
				if !slices.Contains(spec.DNSNames, name) {
					t.Errorf("Certificate gleaner-webhook's dnsNames %v lack %s", spec.DNSNames, name)
				}
			}
			if spec.IssuerRef["kind"] != c.issuerKind || spec.IssuerRef["group"] != "cert-manager.io" {
				t.Errorf("Certificate gleaner-webhook's issuerRef %v, want kind %s", spec.IssuerRef, c.issuerKind)
			}

			m := b.manager(t)
			mc := m.Spec.Template.Spec.Containers[0]
			mo := manager.NewOptions()
			parseArgs(t, "gleaner-manager", mc.Args, mo.AddFlags)
			if err := mo.Validate(); err != nil {
				t.Errorf("gleaner-manager's args %v: %v", mc.Args, err)
			}
			if mo.Webhook.CertSecret != "" {
				t.Errorf("gleaner-manager keeps a certificate Secret of its own, %q, beside cert-manager's", mo.Webhook.CertSecret)
			}
			var mounted string
			for _, vm := range mc.VolumeMounts {
				if vm.MountPath == mo.Webhook.CertDir {
					for _, v := range m.Spec.Template.Spec.Volumes {
						if v.Name == vm.Name && v.Secret != nil {
							mounted = v.Secret.SecretName
						}
					}
				}
			}
			if mounted != spec.SecretName {
				t.Errorf("--webhook-cert-dir %s holds Secret %q, want the Certificate's %q", mo.Webhook.CertDir, mounted, spec.SecretName)
			}
			for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
				for _, u := range b.objects {
					if u.GetKind() == kind {
						expect(t, kind+" "+u.GetName()+" inject-ca-from", u.GetAnnotations()["cert-manager.io/inject-ca-from"], ns+"/gleaner-webhook")
					}
				}
			}
			applyToAPIServer(t, b)
		})
	}
}

// TestChartPackageCRDs: the chart package (make release's gleaner-<version>.tgz, which docs/install.md's upgrade
// pulls) holds under gleaner/crds/ every CRD of config/crd/bases, as it is there, and install.md's upgrade applies
// that directory before helm upgrade.
func TestChartPackageCRDs(t *testing.T) {
	dir := t.TempDir()
	if out, err := runHelm(t, "package", chartDir, "--destination", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tgz, err := filepath.Glob(filepath.Join(dir, "gleaner-*.tgz"))
	if err != nil || len(tgz) != 1 {
		t.Fatalf("helm package wrote %v: %v", tgz, err)
	}
	f, err := os.Open(tgz[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	packaged := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d, name := filepath.Split(h.Name); d == "gleaner/crds/" {
			packaged[name], _ = io.ReadAll(tr)
		}
	}
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("config/crd/bases: %v", err)
	}
	var want []string
	for _, p := range bases {
		name := filepath.Base(p)
		want = append(want, name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(packaged[name], raw) {
			t.Errorf("the chart package's gleaner/crds/%s is not config/crd/bases/%s: run make generate", name, name)
		}
	}
	var got []string
	for name := range packaged {
		got = append(got, name)
	}
	sort.Strings(got)
	expect(t, "the chart package's CRDs", got, want)

	doc, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	const apply = "kubectl apply --server-side --force-conflicts -f gleaner-$CHART_VERSION/gleaner/crds/"
	if i, j := bytes.Index(doc, []byte(apply)), bytes.Index(doc, []byte("helm upgrade gleaner")); i < 0 || j < i {
		t.Errorf("docs/install.md does not apply the package's crds/ (%q) before helm upgrade", apply)
	}
}

// expectOptionValues checks the part of testdata/chart-values.yaml the ecosystem's conventions add: spread,
// disruption budget, pod security contexts and extra volumes, webhook policies, cert-manager and scraping.
func expectOptionValues(t *testing.T, b built, ns string) {
	t.Helper()
	m := b.manager(t)
	mspec := m.Spec.Template.Spec
	if tsc := mspec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].TopologyKey != "topology.kubernetes.io/zone" || tsc[0].LabelSelector == nil ||
		!reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, map[string]string{"app.kubernetes.io/name": "gleaner-manager"}) {
		t.Errorf("manager topologySpreadConstraints: %+v", tsc)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	b.object(t, "PodDisruptionBudget", "gleaner-manager", pdb)
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("manager PodDisruptionBudget: %+v", pdb.Spec)
	}
	if sc := mspec.SecurityContext; sc == nil || ptr.Deref(sc.FSGroup, 0) != 1000 || ptr.Deref(sc.RunAsUser, 0) != 1000 {
		t.Errorf("manager podSecurityContext: %+v", sc)
	}
	a := b.agent(t).Spec.Template.Spec
	if sc := a.SecurityContext; sc == nil || sc.SeccompProfile == nil || ptr.Deref(sc.SeccompProfile.LocalhostProfile, "") != "gleaner-agent.json" {
		t.Errorf("agent podSecurityContext: %+v", sc)
	}
	for name, spec := range map[string]corev1.PodSpec{"manager": mspec, "agent": a} {
		expectExtraVolume(t, name, spec)
	}
	expect(t, "webhooks with chart-values.yaml", webhooks(t, b), map[string]string{
		"slo-controller-config.slo.gleaner.sh":        "Fail 10",
		"slo-controller-config-delete.slo.gleaner.sh": "Ignore 10",
		"colocation-profile.config.gleaner.sh":        "Fail 10",
		"node-amplification.slo.gleaner.sh":           "Ignore 10",
	})
	if hasObject(b, "Issuer", "gleaner-selfsigned") {
		t.Error("certManager.issuerRef renders the self-signed Issuer too")
	}
	issuer, _, _ := unstructured.NestedStringMap(chartObject(t, b, "Certificate", "gleaner-webhook").Object, "spec", "issuerRef")
	expect(t, "Certificate issuerRef", issuer, map[string]string{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
	for _, name := range []string{"gleaner-manager", "gleaner-agent"} {
		expect(t, "ServiceMonitor "+name+" release label", chartObject(t, b, "ServiceMonitor", name).GetLabels()["release"], "prometheus")
	}
	expect(t, "PrometheusRule release label", chartObject(t, b, "PrometheusRule", "gleaner").GetLabels()["release"], "prometheus")
	expect(t, "PrometheusRule namespace", chartObject(t, b, "PrometheusRule", "gleaner").GetNamespace(), ns)
}

// expectExtraVolume: chart-values.yaml's extra volume corp-ca and its mount land in spec beside the chart's own.
func expectExtraVolume(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	hasVolume := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "corp-ca" && v.ConfigMap != nil })
	hasMount := slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(v corev1.VolumeMount) bool {
		return v.Name == "corp-ca" && v.MountPath == "/etc/corp-ca"
	})
	if !hasVolume || !hasMount || len(spec.Volumes) < 2 {
		t.Errorf("%s: extraVolumes %v and extraVolumeMounts %v do not land beside the chart's", name, spec.Volumes, spec.Containers[0].VolumeMounts)
	}
}
