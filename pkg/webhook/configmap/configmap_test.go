package configmap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gleanermanager "github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/pkg/webhook/configmap"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

// The API server gets config/webhook/manifests.yaml as shipped, rewritten by envtest only to call the local server
// with envtest's certificate instead of the Service.
var env = testenv.New(testenv.WithWebhookManifests(filepath.Join("..", "..", "..", "config", "webhook", "manifests.yaml")))

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const namespace = "gleaner-system"

// manager is the one gleaner-manager of this package's tests: a process can run only one (its metrics and
// controller names are process-wide), so the first test that needs it starts it and it runs until the API server
// stops.
var manager struct {
	once sync.Once
	err  error
}

// startManager runs gleaner-manager (every controller and the webhook) with the certificate envtest made, once for
// the package, and waits until it is ready.
func startManager(t *testing.T, e *testenv.Env) {
	t.Helper()
	manager.once.Do(func() { manager.err = runManager(t, e) })
	if manager.err != nil {
		t.Fatalf("starting gleaner-manager: %v", manager.err)
	}
}

func runManager(t *testing.T, e *testenv.Env) error {
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	wh := e.Webhook()
	o := gleanermanager.NewOptions()
	o.Kubeconfig = e.Kubeconfig
	o.LeaderElect = false
	o.MetricsAddr = "0"
	o.HealthAddr = testenv.FreeAddr(t)
	o.Webhook.Host, o.Webhook.Port, o.Webhook.CertDir = wh.LocalServingHost, wh.LocalServingPort, wh.LocalServingCertDir
	o.Webhook.CertSecret = "" // envtest provides the certificate
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gleanermanager.Run(ctx, o) }()
	e.OnStop(func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "gleaner-manager stopped with an error: %v\n", err)
		}
	})
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err // for OnStop
			return fmt.Errorf("manager exited: %w", err)
		default:
		}
		resp, err := http.Get("http://" + o.HealthAddr + "/readyz?verbose")
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("readyz: %s: %s", resp.Status, body)
	}
	return fmt.Errorf("not ready within 30s: %w", last)
}

// kubectl runs kubectl against the test API server and returns its combined output.
func kubectl(t *testing.T, e *testenv.Env, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := e.Kubectl(args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !asExit(err, &exit) {
		t.Fatalf("running kubectl: %v", err)
	}
	return string(out), err
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError) //nolint:errorlint // exec returns it unwrapped
	*target = e
	return ok
}

// configMapYAML renders the SLO ConfigMap with these data, as a user would write it.
func configMapYAML(t *testing.T, name string, data map[string]string) []byte {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
	b, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedTemplate is the data of Koordinator's reference ConfigMap template, every key it has exactly as printed
// (pkg/sloconfig/testdata/seed002); it has no cpu-normalization-config or resource-amplification-config.
func seedTemplate(t *testing.T) map[string]string {
	t.Helper()
	data := map[string]string{}
	for _, k := range sloconfig.Keys() {
		b, err := os.ReadFile(filepath.Join("..", "..", "sloconfig", "testdata", "seed002", "template", k+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		data[k] = string(b)
	}
	return data
}

func TestWebhookRejectsMalformedApply(t *testing.T) {
	e := env.Start(t)
	startManager(t, e)
	ctx := context.Background()

	// A valid ConfigMap applies; its field warnings are printed by kubectl.
	good := map[string]string{
		sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": {"enable": true, "CPUEvictTimeWindowSeconds": 60, "cpuSupressThresholdPercent": 50}}`,
		sloconfig.CPUBurstConfigKey:          `{"clusterStrategy": {"policy": "auto"}}`,
	}
	out, err := kubectl(t, e, configMapYAML(t, "slo-controller-config", good), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("applying a valid ConfigMap failed: %s", out)
	}
	for _, w := range []string{
		`Warning: resource-threshold-config: clusterStrategy.CPUEvictTimeWindowSeconds: matched field "cpuEvictTimeWindowSeconds" ignoring case`,
		"Warning: resource-threshold-config: clusterStrategy.cpuSupressThresholdPercent: unknown field, ignored",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl output does not show %q:\n%s", w, out)
		}
	}

	// Koordinator's template as printed: rejected at once, with the same message the manager's events would give.
	bad := seedTemplate(t)
	out, err = kubectl(t, e, configMapYAML(t, "slo-controller-config", bad), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("applying Koordinator's malformed template succeeded:\n%s", out)
	}
	wantMsg := sloconfig.ParseConfigMap(bad).Err().Error()
	for _, line := range strings.Split(wantMsg, "\n") {
		if !strings.Contains(out, line) {
			t.Errorf("kubectl output does not carry %q:\n%s", line, out)
		}
	}
	for _, k := range []string{"colocation-config: malformed JSON at line 33", "resource-threshold-config: malformed JSON at line 24",
		"resource-qos-config: malformed JSON at line 8", "system-config: malformed JSON at line 7"} {
		if !strings.Contains(out, k) {
			t.Errorf("denial does not name %q:\n%s", k, out)
		}
	}
	if strings.Contains(out, "cpu-burst-config:") || strings.Contains(out, "host-application-config:") {
		t.Errorf("the valid keys of the template are reported as errors:\n%s", out)
	}
	if !strings.Contains(out, `admission webhook "slo-controller-config.slo.gleaner.sh" denied the request`) {
		t.Errorf("not denied by Gleaner's webhook:\n%s", out)
	}
	cm := &corev1.ConfigMap{}
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "slo-controller-config"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data[sloconfig.CPUBurstConfigKey] != good[sloconfig.CPUBurstConfigKey] {
		t.Errorf("the rejected apply changed the ConfigMap: %v", cm.Data)
	}

	// Invalid values are rejected too.
	out, err = kubectl(t, e, configMapYAML(t, "slo-controller-config", map[string]string{
		sloconfig.ResourceThresholdConfigKey: `{"clusterStrategy": {"memoryEvictThresholdPercent": 50, "memoryEvictLowerPercent": 60}}`,
	}), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "resource-threshold-config: clusterStrategy.memoryEvictLowerPercent: Invalid value: 60: must not exceed memoryEvictThresholdPercent (50)") {
		t.Errorf("an inconsistent threshold was not rejected with its reason:\n%s", out)
	}

	// Other ConfigMaps of the namespace never reach the webhook.
	out, err = kubectl(t, e, configMapYAML(t, "other", map[string]string{sloconfig.ColocationConfigKey: "{,"}), "apply", "-f", "-")
	if err != nil {
		t.Errorf("an unrelated ConfigMap was refused:\n%s", out)
	}

	// Deleting is allowed, with a warning about what it means.
	out, err = kubectl(t, e, nil, "delete", "configmap", "-n", namespace, "slo-controller-config")
	if err != nil || !strings.Contains(out, "Warning: deleting gleaner-system/slo-controller-config returns every key to its defaults") {
		t.Errorf("delete: err %v, output:\n%s", err, out)
	}
}

// TestWebhookNamesFieldAndRange: a duration or count out of range, or an integer field given something that is not
// an integer, is denied with a message that names the field and its range (the denial used to read
// `Invalid value: "float64": must be of type int64`, and values that overflow time.Duration were let through).
func TestWebhookNamesFieldAndRange(t *testing.T) {
	e := env.Start(t)
	startManager(t, e)
	const denied = `admission webhook "slo-controller-config.slo.gleaner.sh" denied the request: `
	tests := []struct {
		name, key, value, want string
	}{
		{"int64 maximum", sloconfig.ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 9223372036854775807}}`,
			"resource-threshold-config: clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 9223372036854775807: must be from 1 to 3600"},
		{"not an integer", sloconfig.ResourceThresholdConfigKey, `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 1.5}}`,
			"resource-threshold-config: clusterStrategy.cpuEvictTimeWindowSeconds at line 1, column 53: must be an integer from 1 to 3600, not the JSON number 1.5"},
		{"degrade time overflowing a duration", sloconfig.ColocationConfigKey, `{"enable": true, "degradeTimeMinutes": 200000000}`,
			"colocation-config: degradeTimeMinutes: Invalid value: 200000000: must be from 1 to 1440"},
		{"report interval of a day", sloconfig.ColocationConfigKey, `{"metricReportIntervalSeconds": 86400}`,
			"colocation-config: metricReportIntervalSeconds: Invalid value: 86400: must be from 1 to 3600"},
		{"report interval not shorter than the degrade time", sloconfig.ColocationConfigKey, `{"metricReportIntervalSeconds": 900}`,
			"colocation-config: metricReportIntervalSeconds: Invalid value: 900: must be shorter than degradeTimeMinutes (15 min = 900 s): a NodeMetric reported less often goes stale between reports and the node loses its batch and mid resources"},
		{"aggregate duration as a string", sloconfig.ColocationConfigKey, `{"metricAggregateDurationSeconds": "300"}`,
			"colocation-config: metricAggregateDurationSeconds at line 1, column 40: must be an integer from 1 to 3600, not a JSON string"},
		{"quota burst period in a node strategy", sloconfig.CPUBurstConfigKey,
			`{"nodeStrategies": [{"name": "a", "nodeSelector": {}, "cfsQuotaBurstPeriodSeconds": 100000}]}`,
			"cpu-burst-config: nodeStrategies[0].cfsQuotaBurstPeriodSeconds: Invalid value: 100000: must be from -1 to 86400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "slo-controller-config"},
				Data: map[string]string{tt.key: tt.value}}
			err := e.Client.Create(context.Background(), cm)
			if err == nil {
				_ = e.Client.Delete(context.Background(), cm)
				t.Fatalf("created; want the denial %q", tt.want)
			}
			if got := err.Error(); got != denied+tt.want {
				t.Errorf("denial\n got: %s\nwant: %s", got, denied+tt.want)
			}
		})
	}
}

// storeWithoutWebhook writes data into the SLO ConfigMap while the webhook does not judge it, as a ConfigMap comes
// to hold bad keys that were written while the webhook was away or before an upgrade tightened a bound: the webhook
// configuration's match condition is pointed at another name until the write passes, then restored, and the webhook
// is seen judging again (a dry run of a bad value is refused) before it returns.
func storeWithoutWebhook(t *testing.T, e *testenv.Env, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	setCondition := func(expression string) {
		t.Helper()
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: "gleaner-validating-webhook-configuration"}, vwc); err != nil {
			t.Fatal(err)
		}
		vwc.Webhooks[0].MatchConditions[0].Expression = expression
		if err := e.Client.Update(ctx, vwc); err != nil {
			t.Fatal(err)
		}
	}
	const shipped = "request.name == 'slo-controller-config'"
	setCondition("request.name == 'no-such-configmap'")
	defer setCondition(shipped)
	key := types.NamespacedName{Namespace: namespace, Name: "slo-controller-config"}
	var last error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cm := &corev1.ConfigMap{}
		err := e.Client.Get(ctx, key, cm)
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: key.Name}, Data: data}
			err = e.Client.Create(ctx, cm)
		case err == nil:
			cm.Data = data
			err = e.Client.Update(ctx, cm)
		}
		if err == nil {
			break
		}
		if last = err; time.Now().After(deadline) {
			t.Fatalf("the API server still sends the ConfigMap to the webhook after 30s: %v", last)
		}
	}
	setCondition(shipped)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cm := &corev1.ConfigMap{}
		if err := e.Client.Get(ctx, key, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{sloconfig.ColocationConfigKey: "{,"}
		if err := e.Client.Update(ctx, cm, client.DryRunAll); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook does not judge the ConfigMap again 30s after its match condition was restored")
		}
	}
}

// TestWebhookJudgesOnlyChangedKeys: with two bad keys stored, an operator can mend them one at a time:
// the webhook judges the keys a request writes, and a stored bad key that the request leaves alone is a warning.
func TestWebhookJudgesOnlyChangedKeys(t *testing.T) {
	e := env.Start(t)
	startManager(t, e)
	ctx := context.Background()
	badInterval := `{"metricReportIntervalSeconds": 86400}`
	badWindow := `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 9223372036854775807}}`
	twoBad := map[string]string{
		sloconfig.ColocationConfigKey:        badInterval,
		sloconfig.ResourceThresholdConfigKey: badWindow,
		sloconfig.CPUBurstConfigKey:          `{"clusterStrategy": {"policy": "auto"}}`,
	}
	const (
		intervalErr = "colocation-config: metricReportIntervalSeconds: Invalid value: 86400: must be from 1 to 3600"
		windowErr   = "resource-threshold-config: clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 9223372036854775807: must be from 1 to 3600"
	)
	stored := func(key string) (string, bool) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := e.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "slo-controller-config"}, cm); err != nil {
			t.Fatal(err)
		}
		v, ok := cm.Data[key]
		return v, ok
	}
	warned := func(out, keyErr string) bool {
		return strings.Contains(out, "Warning: "+configmap.StoredInvalidWarning+keyErr)
	}

	t.Run("label only", func(t *testing.T) {
		storeWithoutWebhook(t, e, twoBad)
		out, err := kubectl(t, e, nil, "label", "configmap", "-n", namespace, "slo-controller-config", "mended=no")
		if err != nil {
			t.Fatalf("adding a label was refused:\n%s", out)
		}
		if !warned(out, intervalErr) || !warned(out, windowErr) {
			t.Errorf("the two stored bad keys are not reported as warnings:\n%s", out)
		}
	})

	t.Run("fix one of two", func(t *testing.T) {
		storeWithoutWebhook(t, e, twoBad)
		patch := `{"data": {"colocation-config": "{\"metricReportIntervalSeconds\": 60}"}}`
		out, err := kubectl(t, e, nil, "patch", "configmap", "-n", namespace, "slo-controller-config", "--type=merge", "-p", patch)
		if err != nil {
			t.Fatalf("fixing one of two bad keys was refused:\n%s", out)
		}
		if !warned(out, windowErr) || strings.Contains(out, intervalErr) {
			t.Errorf("want a warning about the other bad key only:\n%s", out)
		}
		if v, _ := stored(sloconfig.ColocationConfigKey); v != `{"metricReportIntervalSeconds": 60}` {
			t.Errorf("the fix was not stored: colocation-config is %q", v)
		}
		// A key the request writes is still judged: the other one rewritten with another bad value is refused, for
		// its own error only.
		patch = `{"data": {"resource-threshold-config": "{\"clusterStrategy\": {\"cpuEvictTimeWindowSeconds\": 0}}"}}`
		out, err = kubectl(t, e, nil, "patch", "configmap", "-n", namespace, "slo-controller-config", "--type=merge", "-p", patch)
		if err == nil || !strings.Contains(out, "resource-threshold-config: clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 0: must be from 1 to 3600") {
			t.Errorf("a bad value written over a bad key was not refused for itself:\n%s", out)
		}
		if v, _ := stored(sloconfig.ResourceThresholdConfigKey); v != badWindow {
			t.Errorf("the refused patch changed resource-threshold-config to %q", v)
		}
	})

	t.Run("remove one of two", func(t *testing.T) {
		storeWithoutWebhook(t, e, twoBad)
		out, err := kubectl(t, e, nil, "patch", "configmap", "-n", namespace, "slo-controller-config", "--type=json",
			"-p", `[{"op": "remove", "path": "/data/resource-threshold-config"}]`)
		if err != nil {
			t.Fatalf("removing one of two bad keys was refused:\n%s", out)
		}
		if !warned(out, intervalErr) || strings.Contains(out, windowErr) {
			t.Errorf("want a warning about the remaining bad key only:\n%s", out)
		}
		if _, ok := stored(sloconfig.ResourceThresholdConfigKey); ok {
			t.Error("resource-threshold-config is still stored")
		}
	})

	_ = e.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "slo-controller-config"}})
}
