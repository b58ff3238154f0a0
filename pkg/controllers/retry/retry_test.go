package retry

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func node(i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprintf("node-%05d", i)}}
}

// TestManyNodesRetryAtOnce: after a pass over 10,000 nodes failed once each (an API-server outage), every node's
// first retry is due after First, not queued behind the others.
func TestManyNodesRetryAtOnce(t *testing.T) {
	rl := PerNode()
	for i := range 10000 {
		if d := rl.When(node(i)); d != First {
			t.Fatalf("node %d of a failed pass retries after %s, want %s", i, d, First)
		}
	}
}

// TestOneNodeBacksOffToMax: a node that keeps failing waits twice as long each time, never more than Max, and starts
// over once it succeeds (Forget).
func TestOneNodeBacksOffToMax(t *testing.T) {
	rl := PerNode()
	want := First
	for range 20 {
		if d := rl.When(node(1)); d != want {
			t.Fatalf("retry after %s, want %s", d, want)
		}
		want = min(2*want, Max)
	}
	if want != Max {
		t.Fatalf("20 failures in a row did not reach the %s ceiling", Max)
	}
	rl.Forget(node(1))
	if d := rl.When(node(1)); d != First {
		t.Errorf("after a success the next failure retries after %s, want %s", d, First)
	}
	if n := rl.NumRequeues(node(2)); n != 0 {
		t.Errorf("another node has %d requeues", n)
	}
}
