package index

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// countingIndexer fails the way an informer does when an index is registered twice.
type countingIndexer struct {
	calls   int
	extract client.IndexerFunc
}

func (c *countingIndexer) IndexField(_ context.Context, _ client.Object, _ string, extract client.IndexerFunc) error {
	c.calls++
	if c.calls > 1 {
		return errors.New("indexer conflict")
	}
	c.extract = extract
	return nil
}

func TestPodsByNodeRegistersOnce(t *testing.T) {
	fi := &countingIndexer{}
	x := New(fi)
	for range 3 {
		if err := x.PodsByNode(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if fi.calls != 1 {
		t.Fatalf("IndexField called %d times, want 1", fi.calls)
	}
	if got := fi.extract(testutil.Pod("p").Node("n1").Obj()); len(got) != 1 || got[0] != "n1" {
		t.Errorf("bound pod indexed as %q, want [n1]", got)
	}
	if got := fi.extract(testutil.Pod("p").Obj()); got != nil {
		t.Errorf("unbound pod indexed as %q, want nothing", got)
	}
	if got := fi.extract(&corev1.Node{}); got != nil {
		t.Errorf("a non-pod indexed as %q", got)
	}
}

func TestPodsByNodeReportsFailure(t *testing.T) {
	fi := &countingIndexer{calls: 1} // the next call fails
	if err := New(fi).PodsByNode(context.Background()); err == nil || err.Error() != "indexing *v1.Pod by spec.nodeName: indexer conflict" {
		t.Fatalf("err = %v", err)
	}
}
