package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The local cluster runs no cluster DNS; the kubelet names the host's nameservers in its place. So a pod with the
// default dnsPolicy (ClusterFirst) starts without the kubelet's MissingClusterDNS warning, which it would otherwise
// record on the pod and the node at every pod start, and every pod gets the host's nameservers.
func TestPodsGetTheHostsNameserversWithoutAWarning(t *testing.T) {
	e := suite.Env(t)
	pod := e.RunPod(testutil.Pod("dns").Container("c").Image(PauseImage).Obj())
	if pod.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("the pod's dnsPolicy is %q, want the default %q", pod.Spec.DNSPolicy, corev1.DNSClusterFirst)
	}
	// The kubelet records its events in order: once the container's Started event is there, a warning it recorded
	// while it made the pod's sandbox is there too.
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		evs, err := e.Clientset.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pod.Name + ",reason=Started"})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) > 0, "no Started event for pod " + pod.Name + " yet"
	})
	warnings, err := e.Clientset.CoreV1().Events("").List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=MissingClusterDNS"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range warnings.Items {
		t.Errorf("MissingClusterDNS on %s %s/%s (%d times): %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace,
			ev.InvolvedObject.Name, ev.Count, ev.Message)
	}

	// What the pods get: containerd writes each sandbox's resolv.conf from the kubelet's DNS config.
	host, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := resolvConfNameservers(string(host))
	files, err := filepath.Glob(filepath.Join(e.Suite.StateDir, "containerd", "root", "*", "sandboxes", "*", "resolv.conf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sandbox resolv.conf under %s/containerd/root (%v)", e.Suite.StateDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if diff := cmp.Diff(want, resolvConfNameservers(string(b))); diff != "" {
			t.Errorf("%s: nameservers differ from the host's (-host +pod):\n%s", f, diff)
		}
	}
}

// resolvConfNameservers lists the addresses of a resolv.conf's nameserver lines, at most three (glibc's limit,
// which the kubelet applies too).
func resolvConfNameservers(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		var addr string
		if _, err := fmt.Sscanf(line, "nameserver %s", &addr); err == nil && len(out) < 3 {
			out = append(out, addr)
		}
	}
	return out
}
