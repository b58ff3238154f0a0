// Package manifests holds tests of what config/ installs, built with kustomize as `kubectl apply -k` builds it:
// the sizing the manifests claim (docs/operations.md), the pods' security contexts and the namespace's Pod
// Security levels against a real API server, and the arguments of every overlay against the binaries' flags; and
// of the Helm chart charts/gleaner, rendered by helm and compared with kustomize's objects.
package manifests

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gleaner-sh/gleaner/test/ci"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// root is the repository, from this package's directory.
const root = "../.."

// built is what kustomize makes of one kustomization directory.
type built struct {
	objects []*unstructured.Unstructured
}

// build runs `kubectl kustomize dir` with the kubectl of KUBEBUILDER_ASSETS (the one the tests' API server comes
// with; `kubectl apply -k` builds the same).
func build(t *testing.T, dir string) built {
	t.Helper()
	assets := os.Getenv(testenv.AssetsVar)
	if assets == "" {
		ci.Skipf(t, "%s is not set: kubectl builds the kustomizations; run `make test`", testenv.AssetsVar)
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", dir).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, exit.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return decode(t, "kubectl kustomize "+dir, out)
}

// decode reads the objects of a YAML stream (what produced it names it in errors).
func decode(t *testing.T, what string, out []byte) built {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var b built
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decoding the output of %s: %v", what, err)
		}
		if len(u.Object) > 0 {
			b.objects = append(b.objects, u)
		}
	}
	return b
}

// overlay writes a kustomization in a directory of the test with dir as its resource and components, and builds
// it, as an operator's overlay of config/default would be.
func overlay(t *testing.T, dir string, components ...string) built {
	t.Helper()
	tmp := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(tmp, abs) // kustomize refuses absolute paths
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + rel(dir) + "]\ncomponents:\n"
	for _, c := range components {
		k += "  - " + rel(c) + "\n"
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return build(t, tmp)
}

// object returns the object of kind and name, converted into into.
func (b built) object(t *testing.T, kind, name string, into runtime.Object) {
	t.Helper()
	for _, u := range b.objects {
		if u.GetKind() == kind && u.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("the build has no %s %s", kind, name)
}

func (b built) manager(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	b.object(t, "Deployment", "gleaner-manager", d)
	return d
}

func (b built) agent(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	b.object(t, "DaemonSet", "gleaner-agent", ds)
	return ds
}

func (b built) namespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	b.object(t, "Namespace", "gleaner-system", ns)
	return ns
}
