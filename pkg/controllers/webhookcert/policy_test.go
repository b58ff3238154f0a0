package webhookcert_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/controllers/webhookcert"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

const (
	policyDir      = "../../../config/policy"
	policyFile     = policyDir + "/webhook-cabundle-only.yaml"
	managerAccount = "gleaner-manager"
)

// managerRBAC is the manager's RBAC as config/rbac installs it.
var managerRBAC = []string{
	"../../../config/rbac/manager_service_account.yaml", "../../../config/rbac/manager/role.yaml",
	"../../../config/rbac/manager_role_binding.yaml", "../../../config/rbac/manager_role_bindings.yaml",
}

// kubectl runs kubectl against the test API server and fails the test on an error.
func kubectl(t *testing.T, e *testenv.Env, args ...string) {
	t.Helper()
	if out, err := e.Kubectl(args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// asManager is a client that authenticates as gleaner-manager's service account with a token of the TokenRequest
// API, and has only the RBAC of config/rbac.
func asManager(t *testing.T, e *testenv.Env) client.WithWatch {
	t.Helper()
	for _, ns := range []string{namespace, "default"} {
		if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	args := []string{"apply"}
	for _, f := range managerRBAC {
		args = append(args, "-f", f)
	}
	kubectl(t, e, args...)
	c, err := client.NewWithWatch(e.TokenConfig(e.ServiceAccountToken(t, namespace, managerAccount, nil)), client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// changes are what a compromised manager would do to its webhook configuration, each refused by the policy.
var changes = []struct {
	name   string
	change func(w *admissionregistrationv1.ValidatingWebhook)
}{
	{"intercept every Secret", func(w *admissionregistrationv1.ValidatingWebhook) {
		w.Rules[0].Resources = []string{"configmaps", "secrets"}
	}},
	{"every namespace", func(w *admissionregistrationv1.ValidatingWebhook) { w.NamespaceSelector = &metav1.LabelSelector{} }},
	{"every ConfigMap of the namespace", func(w *admissionregistrationv1.ValidatingWebhook) { w.MatchConditions = nil }},
	{"a URL of the attacker's", func(w *admissionregistrationv1.ValidatingWebhook) {
		w.ClientConfig.Service, w.ClientConfig.URL = nil, ptr.To("https://attacker.example/validate")
	}},
	{"another service", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.Service.Name = "other" }},
	{"fail open", func(w *admissionregistrationv1.ValidatingWebhook) {
		w.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	}},
	{"a longer timeout", func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](30) }},
}

// Metadata an administrator gave the webhook configuration (kubectl apply keeps its last-applied annotation so).
const (
	adminLabel      = "app.kubernetes.io/part-of"
	adminAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// metadataChanges are what a compromised manager would do to a webhook configuration's metadata, each refused by
// the policy: RBAC's update covers metadata as much as the webhooks.
var metadataChanges = []struct {
	name   string
	change func(o metav1.Object)
}{
	{"a label added", func(o metav1.Object) { o.SetLabels(with(o.GetLabels(), "attacker.example/owned", "true")) }},
	{"the administrator's label changed", func(o metav1.Object) { o.SetLabels(with(o.GetLabels(), adminLabel, "attacker")) }},
	{"the administrator's annotation removed", func(o metav1.Object) {
		a := o.GetAnnotations()
		delete(a, adminAnnotation)
		o.SetAnnotations(a)
	}},
	{"cert-manager's CA injection from a certificate of the attacker's", func(o metav1.Object) {
		o.SetAnnotations(with(o.GetAnnotations(), "cert-manager.io/inject-ca-from", "gleaner-system/attacker"))
	}},
	{"a finalizer that keeps an administrator's delete from completing", func(o metav1.Object) {
		o.SetFinalizers(append(o.GetFinalizers(), "attacker.example/keep"))
	}},
	{"owned by an object that does not exist, for the garbage collector to delete it", func(o metav1.Object) {
		o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: "00000000-0000-0000-0000-000000000001",
		}))
	}},
}

// with returns a copy of m with key set to value.
func with(m map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// giveAdminMetadata has an administrator label and annotate the webhook configuration, so that the manager's
// changes to existing metadata can be tried.
func giveAdminMetadata(t *testing.T, e *testenv.Env, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	obj.SetLabels(with(obj.GetLabels(), adminLabel, "gleaner"))
	obj.SetAnnotations(with(obj.GetAnnotations(), adminAnnotation, "{}"))
	if err := e.Client.Update(ctx, obj); err != nil {
		t.Fatalf("labelling %s as an administrator: %v", obj.GetName(), err)
	}
}

// expectMetadataRefused tries each metadata change as the manager and wants the policy's refusal.
func expectMetadataRefused(t *testing.T, name string, try func(change func(metav1.Object)) error) {
	t.Helper()
	for _, c := range metadataChanges {
		err := try(c.change)
		if err == nil || !strings.Contains(err.Error(), "gleaner-manager may not change the labels, annotations, finalizers or owner references of "+name) {
			t.Errorf("%s of %s as the manager: want the policy's refusal, got %v", c.name, name, err)
		}
	}
}

// TestPolicyHoldsTheManagerToTheCABundle installs config/policy from the kustomize tree and the manager's RBAC,
// and acts as gleaner-manager's service account: the webhook certificate provisioner still sets the caBundle, and
// every other change to the webhook configuration, which RBAC alone lets through, is refused. An administrator's
// changes are not concerned.
func TestPolicyHoldsTheManagerToTheCABundle(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	installShippedWebhookConfiguration(t, e)
	giveAdminMetadata(t, e, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: vwcName}})
	manager := asManager(t, e)
	get := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		t.Helper()
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: vwcName}, vwc); err != nil {
			t.Fatal(err)
		}
		return vwc
	}
	// As a dry run: admission runs, nothing is stored.
	tryAsManager := func(change func(*admissionregistrationv1.ValidatingWebhook)) error {
		vwc := get()
		change(&vwc.Webhooks[0])
		return manager.Update(ctx, vwc, client.DryRunAll)
	}
	tryMetadataAsManager := func(change func(metav1.Object)) error {
		vwc := get()
		change(vwc)
		return manager.Update(ctx, vwc, client.DryRunAll)
	}

	// Without the policy the manager's RBAC lets it rewrite the webhook and its metadata as it likes.
	for _, c := range changes {
		if err := tryAsManager(c.change); err != nil {
			t.Fatalf("without the policy, %s as the manager: %v (RBAC should allow it; the policy is what refuses it)", c.name, err)
		}
	}
	for _, c := range metadataChanges {
		if err := tryMetadataAsManager(c.change); err != nil {
			t.Fatalf("without the policy, %s as the manager: %v (RBAC should allow it; the policy is what refuses it)", c.name, err)
		}
	}

	kubectl(t, e, "apply", "-k", policyDir)
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-k", policyDir).Run() })
	testenv.Eventually(t, "the policy refuses the manager's rule change", func() error {
		if err := tryAsManager(changes[0].change); err == nil {
			return errNotRefused
		}
		return nil
	})

	// The provisioner, as the manager, still sets the caBundle.
	p, _ := newProvisioner(t, manager, clock.RealClock{}, webhookcert.Options{
		Namespace: namespace, SecretName: "gleaner-webhook-cert-policy-test", ServiceName: serviceName,
		ConfigurationName: vwcName, CertDir: t.TempDir(),
	})
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gleaner-webhook-cert-policy-test"}})
	})
	if err := p.Ensure(ctx); err != nil {
		t.Fatalf("setting the caBundle as the manager under the policy: %v", err)
	}
	if len(get().Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Fatal("the provisioner left the caBundle empty")
	}

	for _, c := range changes {
		err := tryAsManager(c.change)
		if err == nil || !strings.Contains(err.Error(), "gleaner-manager may change only the clientConfig.caBundle of the webhooks of "+vwcName) {
			t.Errorf("%s as the manager: want the policy's refusal, got %v", c.name, err)
		}
	}
	expectMetadataRefused(t, vwcName, tryMetadataAsManager)
	// Nor a webhook added, nor one removed, nor the configuration deleted (RBAC already refuses the delete).
	vwc := get()
	vwc.Webhooks = append(vwc.Webhooks, *vwc.Webhooks[0].DeepCopy())
	vwc.Webhooks[1].Name = "secrets.attacker.example"
	if err := manager.Update(ctx, vwc, client.DryRunAll); err == nil {
		t.Error("the manager added a webhook")
	}
	vwc = get()
	vwc.Webhooks = nil
	if err := manager.Update(ctx, vwc, client.DryRunAll); err == nil {
		t.Error("the manager removed its webhook")
	}
	if err := manager.Delete(ctx, get(), client.DryRunAll); err == nil {
		t.Error("the manager deleted the webhook configuration")
	}

	// An administrator is not concerned.
	vwc = get()
	vwc.Webhooks[0].TimeoutSeconds = ptr.To[int32](10)
	if err := e.Client.Update(ctx, vwc, client.DryRunAll); err != nil {
		t.Errorf("an administrator's change: %v", err)
	}
	vwc = get()
	vwc.SetAnnotations(with(vwc.GetAnnotations(), "cert-manager.io/inject-ca-from", "gleaner-system/gleaner-webhook"))
	if err := e.Client.Update(ctx, vwc, client.DryRunAll); err != nil {
		t.Errorf("an administrator's annotation: %v", err)
	}
}

var errNotRefused = errors.New("not refused yet")

// TestPolicyComparesEveryWebhookField: the policy compares every field of ValidatingWebhook and MutatingWebhook
// but clientConfig.caBundle, so a field a new Kubernetes version adds cannot be changed by the manager unnoticed:
// this test fails on the upgrade until the field is added to the policy.
func TestPolicyComparesEveryWebhookField(t *testing.T) {
	b, err := os.ReadFile(filepath.Clean(policyFile))
	if err != nil {
		t.Fatal(err)
	}
	policy := string(b)
	for _, typ := range []reflect.Type{
		reflect.TypeFor[admissionregistrationv1.ValidatingWebhook](), reflect.TypeFor[admissionregistrationv1.MutatingWebhook](),
	} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			switch name {
			case "name":
				if !strings.Contains(policy, "w.name == oldObject.webhooks[i].name") {
					t.Errorf("the policy does not compare %s.name", typ.Name())
				}
			case "clientConfig":
				for _, cf := range []string{"url", "service"} {
					if !strings.Contains(policy, "w.clientConfig.?"+cf+" == oldObject.webhooks[i].clientConfig.?"+cf) {
						t.Errorf("the policy does not compare %s.clientConfig.%s", typ.Name(), cf)
					}
				}
				cc := reflect.TypeFor[admissionregistrationv1.WebhookClientConfig]()
				if cc.NumField() != 3 {
					t.Errorf("WebhookClientConfig has %d fields, the policy knows url, service and caBundle", cc.NumField())
				}
			default:
				if !strings.Contains(policy, "w.?"+name+" == oldObject.webhooks[i].?"+name) {
					t.Errorf("the policy does not compare %s.%s: the manager could change it", typ.Name(), name)
				}
			}
		}
	}
}

// serverMetadata are the ObjectMeta fields the policy leaves alone, and why.
var serverMetadata = map[string]string{
	"name":                       "immutable; the policy's messages name it",
	"namespace":                  "webhook configurations are cluster-scoped",
	"selfLink":                   "no longer set",
	"uid":                        "immutable, set by the API server",
	"resourceVersion":            "set by the API server",
	"generation":                 "set by the API server",
	"creationTimestamp":          "immutable, set by the API server",
	"deletionTimestamp":          "set by the API server on delete",
	"deletionGracePeriodSeconds": "set by the API server on delete",
	"managedFields":              "written by the API server on every update",
}

// TestPolicyComparesEveryMetadataField: the policy compares every field of the configurations' metadata that a
// client writes, and the configurations have no top-level field but metadata and webhooks, so a field a new
// Kubernetes version adds fails here until the policy compares it or says why not.
func TestPolicyComparesEveryMetadataField(t *testing.T) {
	b, err := os.ReadFile(filepath.Clean(policyFile))
	if err != nil {
		t.Fatal(err)
	}
	policy := string(b)
	meta := reflect.TypeFor[metav1.ObjectMeta]()
	for i := range meta.NumField() {
		name, _, _ := strings.Cut(meta.Field(i).Tag.Get("json"), ",")
		if _, ok := serverMetadata[name]; ok {
			continue
		}
		if !strings.Contains(policy, "object.metadata.?"+name+" == oldObject.metadata.?"+name) {
			t.Errorf("the policy does not compare metadata.%s: the manager could change it", name)
		}
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[admissionregistrationv1.ValidatingWebhookConfiguration](), reflect.TypeFor[admissionregistrationv1.MutatingWebhookConfiguration](),
	} {
		for i := range typ.NumField() {
			if f := typ.Field(i); !f.Anonymous && f.Name != "ObjectMeta" && f.Name != "Webhooks" {
				t.Errorf("%s has a field %s the policy does not compare", typ.Name(), f.Name)
			}
		}
	}
}

const mwcName = "gleaner-mutating-webhook-configuration"

// TestPolicyHoldsTheManagerToTheMutatingCABundle: the same policy holds the manager to the caBundle of the
// colocation profile webhook's MutatingWebhookConfiguration, where RBAC alone would let it make every pod of the
// cluster (kube-system's included) pass through it, or fail closed and block pod creation.
func TestPolicyHoldsTheManagerToTheMutatingCABundle(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "webhook", "colocationprofile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(b, shipped); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, shipped); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), shipped) })
	giveAdminMetadata(t, e, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mwcName}})
	manager := asManager(t, e)
	kubectl(t, e, "apply", "-k", policyDir)
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-k", policyDir).Run() })

	get := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		t.Helper()
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: mwcName}, mwc); err != nil {
			t.Fatal(err)
		}
		return mwc
	}
	tryAsManager := func(change func(*admissionregistrationv1.MutatingWebhook)) error {
		mwc := get()
		change(&mwc.Webhooks[0])
		return manager.Update(ctx, mwc, client.DryRunAll)
	}
	tryMetadataAsManager := func(change func(metav1.Object)) error {
		mwc := get()
		change(mwc)
		return manager.Update(ctx, mwc, client.DryRunAll)
	}
	mutatingChanges := []struct {
		name   string
		change func(w *admissionregistrationv1.MutatingWebhook)
	}{
		{"every namespace, kube-system included", func(w *admissionregistrationv1.MutatingWebhook) { w.NamespaceSelector = &metav1.LabelSelector{} }},
		{"fail closed", func(w *admissionregistrationv1.MutatingWebhook) {
			w.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
		}},
		{"every Secret", func(w *admissionregistrationv1.MutatingWebhook) { w.Rules[0].Resources = []string{"pods", "secrets"} }},
		{"reinvoked", func(w *admissionregistrationv1.MutatingWebhook) {
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}},
		{"a URL of the attacker's", func(w *admissionregistrationv1.MutatingWebhook) {
			w.ClientConfig.Service, w.ClientConfig.URL = nil, ptr.To("https://attacker.example/mutate")
		}},
	}
	testenv.Eventually(t, "the policy refuses the manager's namespace change", func() error {
		if err := tryAsManager(mutatingChanges[0].change); err == nil {
			return errNotRefused
		}
		return nil
	})

	// The provisioner, as the manager, sets the caBundle of both configurations (the validating one is not
	// installed here, which is not an error).
	p, _ := newProvisioner(t, manager, clock.RealClock{}, webhookcert.Options{
		Namespace: namespace, SecretName: "gleaner-webhook-cert-mutating-test", ServiceName: serviceName,
		ConfigurationName: vwcName, MutatingConfigurationName: mwcName, CertDir: t.TempDir(),
	})
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gleaner-webhook-cert-mutating-test"}})
	})
	if err := p.Ensure(ctx); err != nil {
		t.Fatalf("setting the mutating caBundle as the manager under the policy: %v", err)
	}
	if len(get().Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Fatal("the provisioner left the mutating caBundle empty")
	}
	for _, c := range mutatingChanges {
		err := tryAsManager(c.change)
		if err == nil || !strings.Contains(err.Error(), "gleaner-manager may change only the clientConfig.caBundle of the webhooks of "+mwcName) {
			t.Errorf("%s as the manager: want the policy's refusal, got %v", c.name, err)
		}
	}
	expectMetadataRefused(t, mwcName, tryMetadataAsManager)
}
