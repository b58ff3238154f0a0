package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCumulativeVec: readings are exported as counters, as read (a lower one too: a reset); a partial match removes
// the series that carry it, and a label the vector lacks removes none.
func TestCumulativeVec(t *testing.T) {
	c := NewCumulativeVec("gleaner_test_bytes_total", "Bytes.", "pod", "direction")
	c.Set(100, "a", "read")
	c.Set(7, "a", "write")
	c.Set(5, "b", "read")
	c.Set(40, "a", "read") // the cgroup was made again
	want := `
# HELP gleaner_test_bytes_total Bytes.
# TYPE gleaner_test_bytes_total counter
gleaner_test_bytes_total{direction="read",pod="a"} 40
gleaner_test_bytes_total{direction="read",pod="b"} 5
gleaner_test_bytes_total{direction="write",pod="a"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n := c.DeletePartialMatch(prometheus.Labels{"namespace": "a"}); n != 0 {
		t.Errorf("a label the vector lacks removed %d series", n)
	}
	if n := c.DeletePartialMatch(prometheus.Labels{"pod": "a"}); n != 2 {
		t.Errorf("removed %d series of pod a, want 2", n)
	}
	if n := testutil.CollectAndCount(c); n != 1 {
		t.Errorf("%d series left, want pod b's", n)
	}
	if c.MetricType(nil) != prometheus.CounterValue {
		t.Error("the vector does not say it is a counter")
	}
}
