// Package mid is the node-resource plugin that publishes kubernetes.io/mid-cpu and kubernetes.io/mid-memory: the
// tier between prod and batch, sized from what prod pods are predicted not to use plus a share of what nobody
// requested. For each of CPU and memory:
//
//	mid         = min(min(prodReclaimable, capacity - nodeUsage) + unallocated x midUnallocatedPercent%,
//	                  capacity x midThresholdPercent%), at least 0
//	unallocated = max(capacity - max(reserved, systemUsed) - prodRequests, 0)
//
// While the NodeMetric reports memory pressure, mid-memory is at most midKept, what the active mid pods on the node
// request less the pods the agent lists as evicted, written at once (as batch-memory: see package batch).
//
// prodReclaimable comes from the NodeMetric (the agent's prediction); without it, or without a usable NodeMetric,
// the plugin removes both resources and says why. Like every quantity of the NodeMetric, it and nodeUsage are held
// to [0, capacity] (framework.Input.Usage), with a warning in the derivation when one was not.
package mid

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the plugin's name.
const Name = "mid"

var resources = []corev1.ResourceName{slov1alpha1.MidCPU, slov1alpha1.MidMemory}

var (
	_ framework.CalculatePlugin = &Plugin{}
	_ framework.PreparePlugin   = &Plugin{}
	_ framework.NeedSyncPlugin  = &Plugin{}
)

// Plugin calculates mid resources.
type Plugin struct{}

// New returns the mid plugin.
func New() *Plugin { return &Plugin{} }

// Name implements framework.Plugin.
func (p *Plugin) Name() string { return Name }

// Reset removes mid-cpu and mid-memory with message as the reason.
func (p *Plugin) Reset(_ *corev1.Node, message string) []framework.ResourceItem {
	items := make([]framework.ResourceItem, 0, len(resources))
	for _, r := range resources {
		items = append(items, framework.ResourceItem{
			Name: r, Reset: true, Message: message,
			Derivation: &slov1alpha1.ResourceDerivation{Resource: r, Plugin: Name, Reason: message},
		})
	}
	return items
}

// Calculate derives mid-cpu and mid-memory, or removes them when their inputs are missing.
func (p *Plugin) Calculate(in *framework.Input) ([]framework.ResourceItem, error) {
	if problem := in.MetricProblem(); problem != "" {
		return p.Reset(in.Node, "degraded: "+problem), nil
	}
	reclaim := in.Metric.Status.ProdReclaimableMetric
	if reclaim == nil || reclaim.Resource == nil {
		return p.Reset(in.Node, "NodeMetric "+in.Node.Name+" reports no prod reclaimable resources"), nil
	}
	s := in.Strategy
	return []framework.ResourceItem{
		calculate(in, corev1.ResourceCPU, reclaim.Resource, ptr.Deref(s.MidCPUThresholdPercent, 100), ptr.Deref(s.MidUnallocatedPercent, 0)),
		calculate(in, corev1.ResourceMemory, reclaim.Resource, ptr.Deref(s.MidMemoryThresholdPercent, 100), ptr.Deref(s.MidUnallocatedPercent, 0)),
	}, nil
}

// Prepare sets mid-cpu and mid-memory in the node's capacity and allocatable.
func (p *Plugin) Prepare(_ *framework.Input, node *corev1.Node, nr *framework.NodeResource) error {
	framework.PrepareResources(node, nr, resources...)
	return nil
}

// NeedSync asks for a write when a mid resource appears, disappears, or moves by more than resourceDiffThreshold.
func (p *Plugin) NeedSync(strategy *sloconfig.ColocationStrategy, oldNode, newNode *corev1.Node) (bool, string) {
	return framework.ResourcesDiffer(oldNode, newNode, ptr.Deref(strategy.ResourceDiffThreshold, 0), resources...)
}

func midResource(r corev1.ResourceName) corev1.ResourceName {
	if r == corev1.ResourceCPU {
		return slov1alpha1.MidCPU
	}
	return slov1alpha1.MidMemory
}

func calculate(in *framework.Input, r corev1.ResourceName, reclaimable corev1.ResourceList, thresholdPercent, unallocatedPercent int64) framework.ResourceItem {
	mr := midResource(r)
	capacity := in.NodeCapacity(r)
	reclaim := in.Usage(reclaimable[r], r)
	nodeUsage := in.NodeUsage(r)
	free := capacity - nodeUsage
	systemUsed, sysTerms := in.SystemUsed(r)
	reserved := in.NodeReserved(r)
	var prodRequests int64
	prodPods := 0
	for _, pod := range in.Pods {
		if framework.Active(pod) && in.PodClass(pod).Priority == slov1alpha1.PriorityProd {
			prodRequests += in.PodRequest(pod, r)
			prodPods++
		}
	}
	unallocated := max(capacity-max(reserved, systemUsed)-prodRequests, 0)
	limit := capacity * thresholdPercent / 100
	result := max(min(min(reclaim, free)+unallocated*unallocatedPercent/100, limit), 0)

	terms := []slov1alpha1.DerivationTerm{
		framework.Term("capacity", capacity, r, "node status.capacity"),
		framework.Term("prodReclaimable", reclaim, r, "NodeMetric prod reclaimable (predicted)"+coldStart(in)),
	}
	terms = append(terms, predictionTerms(in, r)...)
	terms = append(terms,
		framework.Term("nodeUsage", nodeUsage, r, "NodeMetric node usage"),
		framework.Term("free", free, r, "capacity - nodeUsage"),
	)
	terms = append(terms, sysTerms...)
	terms = append(terms,
		framework.Term("prodRequests", prodRequests, r, fmt.Sprintf("requests of %d prod pods", prodPods)),
		framework.Term("unallocated", unallocated, r, "max(capacity - max(reserved, systemUsed) - prodRequests, 0)"),
		framework.Term("unallocatedShare", unallocated*unallocatedPercent/100, r, fmt.Sprintf("midUnallocatedPercent %d%% of unallocated", unallocatedPercent)),
		framework.Term("cap", limit, r, fmt.Sprintf("mid threshold %d%% of capacity", thresholdPercent)),
	)
	formula := "min(min(prodReclaimable, free) + unallocatedShare, cap), at least 0"
	urgent := ""
	if r == corev1.ResourceMemory {
		if kept, ok := in.KeptUnderMemoryPressure(mr); ok {
			terms = append(terms, kept.Term("midKept", "mid", r))
			result, urgent = min(result, kept.Amount), kept.Reason
			formula = "at most midKept while the NodeMetric reports memory pressure; " + formula
		}
	}
	value := framework.ExtendedQuantity(result, r)
	message := fmt.Sprintf("%s = %s", mr, value.String())
	if urgent != "" {
		message += ": " + urgent
	}
	return framework.ResourceItem{
		Name:     mr,
		Quantity: &value,
		Message:  message,
		Urgent:   urgent,
		Derivation: &slov1alpha1.ResourceDerivation{
			Resource: mr, Plugin: Name, Value: &value,
			Formula:    formula,
			Terms:      terms,
			MetricTime: in.Metric.Status.UpdateTime.DeepCopy(),
			Warnings:   in.Warnings(r),
		},
	}
}

// predictionTerms are the agent's prediction inputs the NodeMetric carries, shown after prodReclaimable: the prod
// pods' requests and the predicted peaks it was derived from.
func predictionTerms(in *framework.Input, r corev1.ResourceName) []slov1alpha1.DerivationTerm {
	p := in.Metric.Status.ProdReclaimableMetric.Prediction
	if p == nil {
		return nil
	}
	margin := fmt.Sprintf("before the %d%% safety margin", p.SafetyMarginPercent)
	return []slov1alpha1.DerivationTerm{
		framework.Term("predictedProdRequest", in.Usage(p.ProdRequest[r], r), r, "prod pods' requests, as the agent counted them"),
		framework.Term("prodPeak", in.Usage(p.ProdPeak[r], r), r, "predicted peak of the prod pods together (the largest sample of the last day, or of the same hours a week ago), "+margin),
		framework.Term("systemPeak", in.Usage(p.SystemPeak[r], r), r, "typical peak of the system part (p95 CPU, p98 memory), "+margin),
	}
}

// coldStart explains a prediction still in its cold start: nothing is reclaimable until the models are old enough.
func coldStart(in *framework.Input) string {
	p := in.Metric.Status.ProdReclaimableMetric.Prediction
	switch {
	case p == nil:
		return ""
	case p.ColdStartUntil != nil:
		return "; cold start until " + p.ColdStartUntil.UTC().Format(time.RFC3339)
	case p.ColdPods > 0:
		return fmt.Sprintf("; %d prod pods still in their cold start count as reclaiming nothing", p.ColdPods)
	}
	return ""
}
