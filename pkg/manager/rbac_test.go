package manager

import (
	"context"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/test/testenv"
)

// installAsDefault installs what config/default gives the manager besides its Deployment: the namespaces its
// Roles live in, config/rbac, config/policy and the webhook configurations of config/webhook, which it returns.
func installAsDefault(t *testing.T, e *testenv.Env) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{"gleaner-system", "default"} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"../../config/rbac", "../../config/policy"} {
		if out, err := e.Kubectl("apply", "-k", dir).CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply -k %s: %v\n%s", dir, err, out)
		}
		t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-k", dir).Run() })
	}
	b, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(b, vwc); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), vwc) })
	b, err = os.ReadFile("../../config/webhook/colocationprofile.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(b, mwc); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, mwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), mwc) })
	return vwc, mwc
}
