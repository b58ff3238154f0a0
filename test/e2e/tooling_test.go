package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// A second Up while the cluster runs says so and leaves the running cluster alone.
func TestSecondUpSaysAlreadyRunning(t *testing.T) {
	e := suite.Env(t)
	before, err := e.Cluster.Status()
	if err != nil {
		t.Fatal(err)
	}
	second, err := localcluster.New(localcluster.Config{StateDir: e.Suite.StateDir, RepoRoot: e.Suite.RepoRoot})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Up(e.Ctx); !errors.Is(err, localcluster.ErrAlreadyRunning) {
		t.Fatalf("second Up = %v, want ErrAlreadyRunning", err)
	}
	after, err := e.Cluster.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !after.Running || len(after.Components) != len(before.Components) {
		t.Fatalf("after a second Up: running %t with %d components, want running with %d", after.Running, len(after.Components), len(before.Components))
	}
	for i, c := range after.Components {
		if c.PID != before.Components[i].PID {
			t.Errorf("%s restarted: pid %d, was %d", c.Name, c.PID, before.Components[i].PID)
		}
	}
	e.Eventually(30*time.Second, func(ctx context.Context) (bool, string) {
		n, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Message
			}
		}
		return false, "no Ready condition"
	})
}

// Status reports every component alive with its memory; its numbers go into docs/benchmarks.md.
func TestStatusReportsComponents(t *testing.T) {
	e := suite.Env(t)
	s, err := e.Cluster.Status()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet"}
	if len(s.Components) != len(want) {
		t.Fatalf("components %+v, want %v", s.Components, want)
	}
	for i, c := range s.Components {
		if c.Name != want[i] || !c.Alive || c.RSSBytes == 0 {
			t.Errorf("component %d = %s alive %t rss %d, want %s alive with memory", i, c.Name, c.Alive, c.RSSBytes, want[i])
		}
		t.Logf("%-24s pid %-7d rss %4d MiB", c.Name, c.PID, c.RSSBytes>>20)
	}
}

// The funcs registered with OnInterrupt run last first when a signal ends the run, and an unregistered one does not.
func TestOnInterruptRunsWhatIsRegistered(t *testing.T) {
	var s Suite
	var ran []string
	s.OnInterrupt(func() { ran = append(ran, "first") })
	unregister := s.OnInterrupt(func() { ran = append(ran, "gone") })
	s.OnInterrupt(func() { ran = append(ran, "last") })
	unregister()
	s.interrupted()
	if want := []string{"last", "first"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}
