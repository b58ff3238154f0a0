package manifests

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSecurityContexts: as config/default installs them, both pods run under the runtime's default seccomp
// filter without privileged mode or privilege escalation on a read-only root file system; the manager as a
// non-root user without any capability.
func TestSecurityContexts(t *testing.T) {
	b := build(t, filepath.Join(root, "config", "default"))
	for _, w := range []struct {
		name string
		spec corev1.PodSpec
	}{{"gleaner-manager", b.manager(t).Spec.Template.Spec}, {"gleaner-agent", b.agent(t).Spec.Template.Spec}} {
		if psc := w.spec.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccompProfile must be RuntimeDefault: %+v", w.name, w.spec.SecurityContext)
		}
		for _, c := range w.spec.Containers {
			expectUnprivileged(t, w.name+"/"+c.Name, c.SecurityContext)
		}
	}
	m := b.manager(t).Spec.Template.Spec
	if psc := m.SecurityContext; psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("gleaner-manager must run as non-root")
	}
	if caps := m.Containers[0].SecurityContext.Capabilities; caps == nil || len(caps.Add) > 0 || len(caps.Drop) != 1 || caps.Drop[0] != "ALL" {
		t.Errorf("gleaner-manager must drop every capability and add none: %+v", caps)
	}
}

// expectUnprivileged checks a container: no privileged mode, no privilege escalation, a read-only root, and the
// pod's seccomp profile.
func expectUnprivileged(t *testing.T, what string, sc *corev1.SecurityContext) {
	t.Helper()
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: want no privileged mode, no privilege escalation, a read-only root: %+v", what, sc)
	}
	if sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s overrides the pod's seccomp profile: %+v", what, sc.SeccompProfile)
	}
}

// TestPodSecurityLevels runs the API server's Pod Security admission on the pods of config/default: the manager's
// meets the restricted level, the agent's needs privileged (baseline refuses its hostPID and hostPaths), and the
// namespace config/default installs enforces exactly that and audits against restricted.
func TestPodSecurityLevels(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	b := build(t, filepath.Join(root, "config", "default"))
	shipped := b.namespace(t)
	labels := shipped.Labels
	if labels["pod-security.kubernetes.io/enforce"] != "privileged" || labels["pod-security.kubernetes.io/audit"] != "restricted" {
		t.Errorf("namespace gleaner-system: want enforce=privileged and audit=restricted, got %v", labels)
	}

	namespaceWith := func(name string, labels map[string]string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if err := e.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
		return name
	}
	restricted := namespaceWith("psa-restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	baseline := namespaceWith("psa-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	asShipped := namespaceWith("psa-as-shipped", labels)

	create := func(ns, name string, spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
		return e.Client.Create(ctx, pod, client.DryRunAll)
	}
	manager, agent := b.manager(t).Spec.Template.Spec, b.agent(t).Spec.Template.Spec
	if err := create(restricted, "manager", manager); err != nil {
		t.Errorf("gleaner-manager's pod in a restricted namespace: %v", err)
	}
	err := create(baseline, "agent", agent)
	if err == nil || !strings.Contains(err.Error(), "host namespaces (hostPID=true)") || !strings.Contains(err.Error(), "hostPath volumes") {
		t.Errorf("gleaner-agent's pod in a baseline namespace: want refused for hostPID and hostPath, got %v", err)
	}
	for name, spec := range map[string]corev1.PodSpec{"manager": manager, "agent": agent} {
		if err := create(asShipped, name, spec); err != nil {
			t.Errorf("gleaner-%s's pod in a namespace labelled as gleaner-system: %v", name, err)
		}
	}
}
