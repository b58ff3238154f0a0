package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/reporter"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// statusTemplate is the NodeMetric status the agent's reporter builds (reporter.Build, default policy: usage over
// 5 minutes, aggregated usages over 5, 10 and 15 minutes) for a node with pods pods whose metric cache is full, and
// a prod-reclaimable prediction with its terms, as the agent reports with prediction on (its default). Each
// simulated report takes this shape with its own node's pods and fresh numbers.
func statusTemplate(pods int) (*slov1alpha1.NodeMetricStatus, error) {
	clk := clock.RealClock{}
	cache, err := metriccache.New(metriccache.DefaultConfig(), clk)
	if err != nil {
		return nil, err
	}
	store := statesinformer.NewStore()
	uids := make([]string, pods)
	for k := range pods {
		p := benchPod(0, k, nodeName(0))
		uids[k] = fmt.Sprintf("7c0e5a4e-0000-4000-8000-%012d", k)
		p.UID, p.ResourceVersion = types.UID(uids[k]), "1"
		p.Spec.Priority = ptr(map[string]int32{"gleaner-prod": 9500, "gleaner-mid": 7500, "gleaner-batch": 5500}[p.Spec.PriorityClassName])
		store.SetPod(p)
	}
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	for s := 900; s >= 0; s-- {
		samples := []metriccache.Sample{
			{Key: metriccache.NodeKey(metriccache.NodeCPUUsage), Value: 12 + rng.Float64()},
			{Key: metriccache.NodeKey(metriccache.NodeMemoryUsage), Value: 60<<30 + rng.Float64()*(1<<30)},
			{Key: metriccache.NodeKey(metriccache.SystemCPUUsage), Value: 1.5 + rng.Float64()/10},
			{Key: metriccache.NodeKey(metriccache.SystemMemoryUsage), Value: 4<<30 + rng.Float64()*(1<<28)},
		}
		for _, uid := range uids {
			samples = append(samples,
				metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUUsage, uid), Value: 0.05 + rng.Float64()/2},
				metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, uid), Value: 100<<20 + rng.Float64()*(1<<30)})
		}
		cache.Append(now.Add(-time.Duration(s)*time.Second), samples...)
	}
	r := reporter.New(nil, store, cache, clk, metrics.New(), nodeName(0), reporter.DefaultOptions())
	st := r.Build(now, reporter.PolicyOf(nil))
	if st == nil || len(st.PodsMetric) != pods {
		return nil, fmt.Errorf("building the template NodeMetric status: the reporter built %v", st)
	}
	q := resource.MustParse
	st.ProdReclaimableMetric = &slov1alpha1.ReclaimableMetric{
		Resource: corev1.ResourceList{corev1.ResourceCPU: q("4250m"), corev1.ResourceMemory: q("16234Mi")},
		Prediction: &slov1alpha1.ReclaimablePrediction{
			ProdRequest:         corev1.ResourceList{corev1.ResourceCPU: q("9"), corev1.ResourceMemory: q("20Gi")},
			ProdPeak:            corev1.ResourceList{corev1.ResourceCPU: q("3850m"), corev1.ResourceMemory: q("3712Mi")},
			SystemPeak:          corev1.ResourceList{corev1.ResourceCPU: q("1612m"), corev1.ResourceMemory: q("4301Mi")},
			SafetyMarginPercent: 10,
		},
	}
	return st, nil
}

// statusFor is a report of the template's shape for a node's pods at now: the pods' identities from the agent's
// informer, every usage moved a little, as real usage moves between reports.
func statusFor(tmpl *slov1alpha1.NodeMetricStatus, pods []*statesinformer.PodMeta, now time.Time, rng *rand.Rand) *slov1alpha1.NodeMetricStatus {
	st := tmpl.DeepCopy()
	st.UpdateTime = &metav1.Time{Time: now.Truncate(time.Second)}
	jitter(st.NodeMetric.NodeUsage, rng)
	jitter(st.NodeMetric.SystemUsage, rng)
	for _, a := range append(st.NodeMetric.AggregatedNodeUsages, st.NodeMetric.AggregatedSystemUsages...) {
		for _, l := range a.Usage {
			jitter(l, rng)
		}
	}
	var out []slov1alpha1.PodMetricInfo
	for k, pm := range st.PodsMetric {
		if k >= len(pods) {
			break
		}
		p := pods[k]
		pm.Name, pm.Namespace, pm.UID, pm.Priority, pm.QoS = p.Pod.Name, p.Pod.Namespace, string(p.Pod.UID), p.Priority, p.QoS
		jitter(pm.Usage, rng)
		out = append(out, pm)
	}
	st.PodsMetric = out
	return st
}

// jitter moves CPU by up to 50 millicores and memory by up to 8 MiB (in the reporter's units).
func jitter(l corev1.ResourceList, rng *rand.Rand) {
	if c, ok := l[corev1.ResourceCPU]; ok {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(c.MilliValue()+rng.Int64N(101)-50, 0), resource.DecimalSI)
	}
	if m, ok := l[corev1.ResourceMemory]; ok {
		unit := int64(1 << 10)
		if m.Value() >= 1<<30 {
			unit = 1 << 20
		}
		l[corev1.ResourceMemory] = *resource.NewQuantity(max(m.Value()+(rng.Int64N(17)-8)<<20, 0)/unit*unit, resource.BinarySI)
	}
}

// statusSize is the JSON size of a status.
func statusSize(st *slov1alpha1.NodeMetricStatus) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}
