package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ServiceAccountToken returns a token of the service account namespace/name from the TokenRequest API, as the
// kubelet gets one for a pod, creating the namespace and the account when they do not exist. With pod set, the
// token is bound to that pod, and through it to the pod's node: the API server then authenticates it with the
// extra authentication.kubernetes.io/node-name, as a real pod's projected token.
func (e *Env) ServiceAccountToken(t testing.TB, namespace, name string, pod *corev1.Pod) string {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating service account %s/%s: %v", namespace, name, err)
	}
	req := &authenticationv1.TokenRequest{}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// TokenConfig returns a client configuration for the API server that authenticates with token.
func (e *Env) TokenConfig(token string) *rest.Config {
	return &rest.Config{Host: e.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData}}
}

// TokenKubeconfig writes a kubeconfig that authenticates with token into a directory of the test and returns its
// path, for programs that take a --kubeconfig.
func (e *Env) TokenKubeconfig(t testing.TB, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "token"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing kubeconfig %s: %v", path, err)
	}
	return path
}

// UserKubeconfig writes a kubeconfig for the user name in groups (by client certificate, as UserConfig) into a
// directory of the test and returns its path, for commands such as kubectl glean.
func (e *Env) UserKubeconfig(t testing.TB, name string, groups ...string) string {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatalf("adding user %q: %v", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("rendering the kubeconfig of %q: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(fmt.Errorf("writing kubeconfig %s: %w", path, err))
	}
	return path
}
