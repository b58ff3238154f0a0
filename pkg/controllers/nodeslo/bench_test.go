package nodeslo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// BenchmarkNodeSLO2000Nodes measures, against the envtest API server with 2,000 nodes in ten pools: the time from
// manager start until every node has its NodeSLO and NodeMetric and the write requests that took, then the time
// for a change of one pool's threshold to reach that pool's 200 NodeSLOs and the write requests it caused. Run it
// alone (not part of make test):
//
//	KUBEBUILDER_ASSETS=$(hack/kube-build.sh envtest) go test -run '^$' -bench NodeSLO2000Nodes -benchtime 1x ./pkg/controllers/nodeslo/
func BenchmarkNodeSLO2000Nodes(b *testing.B) {
	const nodes, pools = 2000, 10
	for _, qps := range []float32{30, -1} {
		b.Run(fmt.Sprintf("client-qps=%v", qps), func(b *testing.B) {
			for range b.N {
				benchmarkNodes(b, nodes, pools, qps)
			}
		})
	}
}

func benchmarkNodes(b *testing.B, nodes, pools int, qps float32) {
	e := env.Start(b)
	ctx := context.Background()
	run := fmt.Sprintf("bench-%d", time.Now().Unix())
	prefix := run + "-"
	create := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range create {
				n := testutil.Node(fmt.Sprintf("%s%04d", prefix, i)).Label("pool", fmt.Sprintf("p%d", i%pools)).Label("bench-run", run).Obj()
				if err := e.Client.Create(ctx, n); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range nodes {
		create <- i
	}
	close(create)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	// The next run must not find these nodes (their objects stay: envtest has no garbage collector, and without a
	// node they are never reconciled). Registered before the manager starts, so it runs after the manager stopped.
	b.Cleanup(func() {
		if err := e.Client.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{"bench-run": run}); err != nil {
			b.Error(err)
		}
	})

	threshold := func(p0 int) string {
		return fmt.Sprintf(`{"clusterStrategy": {"enable": true}, "nodeStrategies": [{"name": "p0", "nodeSelector": {"matchLabels": {"pool": "p0"}}, "cpuSuppressThresholdPercent": %d}]}`, p0)
	}
	b.ResetTimer()
	t0 := time.Now()
	c := start(b, func(o *ctrl.Options) {
		o.NewClient = wrapQPS(o.NewClient, qps)
	})
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: threshold(50)})
	c.waitCount(prefix, nodes, func(s *slov1alpha1.NodeSLOSpec, pool string) bool {
		return s.ResourceUsedThresholdWithBE.Enable != nil
	})
	startup := time.Since(t0)
	startupWrites := sum(c.takeWrites())

	t0 = time.Now()
	c.apply(map[string]string{sloconfig.ResourceThresholdConfigKey: threshold(45)})
	c.waitCount(prefix, nodes/pools, func(s *slov1alpha1.NodeSLOSpec, pool string) bool {
		return pool == "p0" && s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent != nil && *s.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent == 45
	})
	change := time.Since(t0)
	time.Sleep(2 * time.Second) // late writes would show in the count
	b.StopTimer()
	b.ReportMetric(startup.Seconds(), "startup-s")
	b.ReportMetric(float64(startupWrites)/float64(nodes), "startup-writes/node")
	b.ReportMetric(change.Seconds(), "change-s")
	b.ReportMetric(float64(sum(c.takeWrites())), "change-writes")
}

// waitCount waits until want NodeSLOs of nodes named with prefix satisfy ok, with both objects present.
func (c *cluster) waitCount(prefix string, want int, ok func(*slov1alpha1.NodeSLOSpec, string) bool) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var slos slov1alpha1.NodeSLOList
		var metrics slov1alpha1.NodeMetricList
		if err := c.e.Client.List(context.Background(), &slos); err != nil {
			c.t.Fatal(err)
		}
		if err := c.e.Client.List(context.Background(), &metrics); err != nil {
			c.t.Fatal(err)
		}
		got, gotMetrics := 0, 0
		for _, m := range metrics.Items {
			if len(m.Name) > len(prefix) && m.Name[:len(prefix)] == prefix {
				gotMetrics++
			}
		}
		for i := range slos.Items {
			s := &slos.Items[i]
			var idx int
			if _, err := fmt.Sscanf(s.Name, prefix+"%d", &idx); err != nil {
				continue
			}
			if ok(&s.Spec, fmt.Sprintf("p%d", idx%10)) {
				got++
			}
		}
		if got >= want && gotMetrics >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("fewer than %d NodeSLOs reached the wanted state in 5 minutes", want)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// wrapQPS makes the manager's client use this client-side rate limit (-1: none), as --kube-api-qps would.
func wrapQPS(next func(*rest.Config, client.Options) (client.Client, error), qps float32) func(*rest.Config, client.Options) (client.Client, error) {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = qps, int(max(qps, 1)*2)
		return next(cfg, opts)
	}
}
