// Package batch is the node-resource plugin that publishes kubernetes.io/batch-cpu and kubernetes.io/batch-memory:
// the part of a node that high-priority pods and the system reserve but do not use, minus a safety margin.
//
// For each of CPU and memory:
//
//	batch = capacity - safetyMargin - systemUsed - hpUsed, at least 0, at most cap, and never below batchHeld
//
//	safetyMargin = capacity x (100 - reclaimThresholdPercent)%
//	systemUsed   = max(system usage + high-priority host applications, reserved)
//	               (reserved only, under the request policy: it must not move with measured usage)
//	reserved     = max(capacity - allocatable, what the node's reservation annotation reserves)
//	hpUsed       = over the high-priority pods (every Pending or Running pod whose class, slov1alpha1.ClassOf,
//	               is neither batch nor free):
//	               usage policy            their measured usage, an LSE pod's CPU at its request; a pod without a
//	                                       metric at its request
//	               request policy          their requests (memory only)
//	               maxUsageRequest policy  max(usage, request) per pod; a pod without a metric at its request
//	               A pod's request includes its kubernetes.io/mid-* request.
//	               Plus, except under the request policy, hpUnattributed: the usage of the NodeMetric's pods that
//	               no active pod of the manager's cache claims, unless the NodeMetric says they are batch or free.
//	cap          = capacity x batch{CPU,Memory}ThresholdPercent%
//	batchHeld    = what the active batch pods on the node already request
//
// batchHeld is a floor because publishing less than running batch pods hold helps nobody: it cannot stop them, and
// a kubelet that restarts would reject them as not fitting. Protecting services from batch pods under pressure is
// the agent's job (suppression and eviction); the floor only stops new batch pods from being placed.
//
// Under memory pressure (the NodeMetric's status.memoryPressure: the agent evicts, or evicted less than the hold
// time ago, pods for the node's memory) batch-memory is at most batchKept, and so, with the floor, exactly that,
// whatever the calculation gives:
//
//	batchKept = what the active batch pods on the node request, leaving out the pods the agent lists as evicted
//
// so that the node offers no room to a new batch pod, the replacement of an evicted one included, which the agent
// would only evict again. The value is written at once however little it moved (framework.ResourceItem.Urgent):
// the room an evicted pod leaves must be gone from the node before its replacement is scheduled.
//
// When the node has a NodeResourceTopology, the same calculation runs per NUMA zone, with the zone's own capacity
// and the node's system and high-priority usage attributed to zones in proportion to their capacity; the zone
// values are written into the NodeResourceTopology in PreUpdate.
//
// Every usage is read from the NodeMetric held to [0, capacity] (framework.Input.Usage), and a derivation that
// clamped one says so in its warnings. Without a usable NodeMetric (missing, never reported, older than
// degradeTimeMinutes, stamped ahead of the manager's clock by more than framework.MaxClockSkew) the plugin
// degrades: it removes both resources and says why.
package batch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the plugin's name.
const Name = "batch"

// Resources are the resources this plugin publishes, in order.
var resources = []corev1.ResourceName{slov1alpha1.BatchCPU, slov1alpha1.BatchMemory}

var (
	_ framework.SetupPlugin     = &Plugin{}
	_ framework.CalculatePlugin = &Plugin{}
	_ framework.PreUpdatePlugin = &Plugin{}
	_ framework.PreparePlugin   = &Plugin{}
	_ framework.NeedSyncPlugin  = &Plugin{}
)

// Plugin calculates batch resources.
type Plugin struct {
	client client.Client
}

// New returns the batch plugin.
func New() *Plugin { return &Plugin{} }

// Name implements framework.Plugin.
func (p *Plugin) Name() string { return Name }

// Setup keeps the client that writes zone resources into NodeResourceTopology objects.
func (p *Plugin) Setup(opts *framework.SetupOptions) error {
	p.client = opts.Client
	return nil
}

// Reset removes batch-cpu and batch-memory with message as the reason.
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

// Calculate derives batch-cpu and batch-memory for in.Node, or degrades when the NodeMetric cannot be used.
func (p *Plugin) Calculate(in *framework.Input) ([]framework.ResourceItem, error) {
	if problem := in.MetricProblem(); problem != "" {
		return p.Reset(in.Node, "degraded: "+problem), nil
	}
	s := in.Strategy
	cpu, err := calculate(in, corev1.ResourceCPU, policyOf(s.CPUCalculatePolicy),
		ptr.Deref(s.CPUReclaimThresholdPercent, 0), ptr.Deref(s.BatchCPUThresholdPercent, 100))
	if err != nil {
		return nil, err
	}
	mem, err := calculate(in, corev1.ResourceMemory, policyOf(s.MemoryCalculatePolicy),
		ptr.Deref(s.MemoryReclaimThresholdPercent, 0), ptr.Deref(s.BatchMemoryThresholdPercent, 100))
	if err != nil {
		return nil, err
	}
	return []framework.ResourceItem{cpu, mem}, nil
}

func policyOf(p *sloconfig.CalculatePolicy) sloconfig.CalculatePolicy {
	if p == nil {
		return sloconfig.CalculateByUsage
	}
	return *p
}

// PreUpdate writes the zone values into the node's NodeResourceTopology, when it has one.
func (p *Plugin) PreUpdate(ctx context.Context, in *framework.Input, nr *framework.NodeResource) error {
	if in.Topology == nil || in.Topology.Object == nil || p.client == nil {
		return nil
	}
	return framework.UpdateTopologyZones(ctx, p.client, in.Topology.Object, nr.ZoneResources, resources...)
}

// Prepare sets batch-cpu and batch-memory in the node's capacity and allocatable.
func (p *Plugin) Prepare(_ *framework.Input, node *corev1.Node, nr *framework.NodeResource) error {
	framework.PrepareResources(node, nr, resources...)
	return nil
}

// NeedSync asks for a write when a batch resource appears, disappears, or moves by more than resourceDiffThreshold.
func (p *Plugin) NeedSync(strategy *sloconfig.ColocationStrategy, oldNode, newNode *corev1.Node) (bool, string) {
	return framework.ResourcesDiffer(oldNode, newNode, ptr.Deref(strategy.ResourceDiffThreshold, 0), resources...)
}

// batchResource maps cpu and memory to the batch resource published for them.
func batchResource(r corev1.ResourceName) corev1.ResourceName {
	if r == corev1.ResourceCPU {
		return slov1alpha1.BatchCPU
	}
	return slov1alpha1.BatchMemory
}

// hpUsage is the high-priority pods' share of a resource under a policy.
type hpUsage struct {
	used, requests   int64
	pods             int
	withoutMetric    int
	lseAtRequest     int
	unknownLabels    []string
	unattributed     int64
	unattributedPods int
	unattributedLow  int
}

func sumHP(in *framework.Input, r corev1.ResourceName, policy sloconfig.CalculatePolicy) hpUsage {
	var h hpUsage
	for _, pod := range in.Pods {
		if !framework.Active(pod) {
			continue
		}
		class := in.PodClass(pod)
		if !class.Priority.HighPriority() {
			continue
		}
		h.pods++
		h.unknownLabels = append(h.unknownLabels, class.Unknown...)
		req := in.PodRequest(pod, r)
		h.requests += req
		used, ok := in.PodUsage(pod, r)
		if !ok {
			h.withoutMetric++
		}
		switch {
		case policy == sloconfig.CalculateByRequest:
			h.used += req
		case !ok:
			h.used += req
		case policy == sloconfig.CalculateByMaxUsageRequest:
			h.used += max(used, req)
		case r == corev1.ResourceCPU && class.QoS == slov1alpha1.QoSLSE:
			// An LSE pod holds its cores alone: what it leaves idle, no batch pod can run on.
			h.used += req
			h.lseAtRequest++
		default:
			h.used += used
		}
	}
	// The request policy counts what is requested; records of pods the manager does not hold carry no requests.
	if policy == sloconfig.CalculateByRequest {
		return h
	}
	for _, pm := range in.UnattributedPods() {
		if !pm.Priority.HighPriority() {
			h.unattributedLow++
			continue
		}
		q, _ := pm.Usage(r)
		h.unattributed += in.Usage(q, r)
		h.unattributedPods++
	}
	h.used += h.unattributed
	return h
}

func calculate(in *framework.Input, r corev1.ResourceName, policy sloconfig.CalculatePolicy, reclaimPercent, capPercent int64) (framework.ResourceItem, error) {
	br := batchResource(r)
	switch policy {
	case sloconfig.CalculateByUsage, sloconfig.CalculateByMaxUsageRequest:
	case sloconfig.CalculateByRequest:
		if r == corev1.ResourceCPU {
			return framework.ResourceItem{}, fmt.Errorf("calculate policy %q is not supported for cpu", policy)
		}
	default:
		return framework.ResourceItem{}, fmt.Errorf("unknown calculate policy %q for %s", policy, r)
	}

	capacity := in.NodeCapacity(r)
	margin := capacity * (100 - reclaimPercent) / 100
	var terms []slov1alpha1.DerivationTerm
	terms = append(terms,
		framework.Term("capacity", capacity, r, "node status.capacity"),
		framework.Term("safetyMargin", margin, r, fmt.Sprintf("(100 - reclaimThresholdPercent %d)%% of capacity", reclaimPercent)))

	var systemUsed int64
	if policy == sloconfig.CalculateByRequest {
		systemUsed = in.NodeReserved(r)
		terms = append(terms, in.ReservedTerms(r)...)
		terms = append(terms, framework.Term("systemUsed", systemUsed, r, "reserved (request policy)"))
	} else {
		var sysTerms []slov1alpha1.DerivationTerm
		systemUsed, sysTerms = in.SystemUsed(r)
		terms = append(terms, sysTerms...)
	}

	hp := sumHP(in, r, policy)
	terms = append(terms,
		framework.Term("hpRequests", hp.requests, r, requestsDetail(hp)),
		framework.Term("hpUnattributed", hp.unattributed, r, unattributedDetail(policy, hp)),
		framework.Term("hpUsed", hp.used, r, hpDetail(policy, hp)))

	calculated := capacity - margin - systemUsed - hp.used
	terms = append(terms, framework.Term("calculated", calculated, r, "capacity - safetyMargin - systemUsed - hpUsed"))
	limit := capacity * capPercent / 100
	terms = append(terms, framework.Term("cap", limit, r, fmt.Sprintf("batch threshold %d%% of capacity", capPercent)))
	held := in.Requested(br, nil)
	terms = append(terms, framework.Term("batchHeld", held, r, "requested by active batch pods"))

	result := max(min(max(calculated, 0), limit), held)
	formula := "min(max(capacity - safetyMargin - systemUsed - hpUsed, 0), cap), at least batchHeld; policy " + string(policy)
	urgent := ""
	if r == corev1.ResourceMemory {
		if kept, ok := in.KeptUnderMemoryPressure(br); ok {
			terms = append(terms, kept.Term("batchKept", "batch", r))
			result, urgent = min(result, kept.Amount), kept.Reason
			formula = "at most batchKept while the NodeMetric reports memory pressure; " + formula
		}
	}
	value := framework.ExtendedQuantity(result, r)
	message := fmt.Sprintf("%s = %s by policy %s", br, value.String(), policy)
	if urgent != "" {
		message = fmt.Sprintf("%s = %s, what batch pods already request: %s", br, value.String(), urgent)
	}
	item := framework.ResourceItem{
		Name:     br,
		Quantity: &value,
		Message:  message,
		Urgent:   urgent,
		Derivation: &slov1alpha1.ResourceDerivation{
			Resource: br, Plugin: Name, Value: &value,
			Formula:    formula,
			Terms:      terms,
			MetricTime: in.Metric.Status.UpdateTime.DeepCopy(),
			Warnings:   in.Warnings(r),
		},
	}
	if in.Topology != nil {
		item.ZoneQuantity = zoneValues(in, r, reclaimPercent, capPercent, systemUsed+hp.used, capacity)
		item.Derivation.Zones = item.ZoneQuantity
	}
	return item, nil
}

func requestsDetail(hp hpUsage) string {
	d := fmt.Sprintf("requests of %d high-priority pods", hp.pods)
	if n := len(hp.unknownLabels); n > 0 {
		d += fmt.Sprintf("; %d class labels of unknown value, such as %s", n, hp.unknownLabels[0])
	}
	return d
}

func unattributedDetail(policy sloconfig.CalculatePolicy, hp hpUsage) string {
	if policy == sloconfig.CalculateByRequest {
		return "not counted under the request policy"
	}
	return fmt.Sprintf("usage of %d NodeMetric pods not active in the manager's cache (%d batch/free left out)",
		hp.unattributedPods, hp.unattributedLow)
}

func hpDetail(policy sloconfig.CalculatePolicy, hp hpUsage) string {
	switch policy {
	case sloconfig.CalculateByRequest:
		return fmt.Sprintf("requests of %d high-priority pods (request policy)", hp.pods)
	case sloconfig.CalculateByMaxUsageRequest:
		return fmt.Sprintf("max(usage, request) of %d high-priority pods, %d without metric at request, plus hpUnattributed",
			hp.pods, hp.withoutMetric)
	default:
		lse := ""
		if hp.lseAtRequest > 0 {
			lse = fmt.Sprintf(" (%d LSE at CPU request)", hp.lseAtRequest)
		}
		return fmt.Sprintf("usage of %d high-priority pods%s, %d without metric at request, plus hpUnattributed",
			hp.pods, lse, hp.withoutMetric)
	}
}

// zoneValues runs the calculation per NUMA zone, attributing node-level usage to zones by capacity share.
func zoneValues(in *framework.Input, r corev1.ResourceName, reclaimPercent, capPercent, nodeUsed, nodeCapacity int64) map[string]resource.Quantity {
	zones := map[string]resource.Quantity{}
	for _, z := range in.Topology.Zones {
		q, ok := z.Capacity[r]
		if !ok {
			continue
		}
		zc := framework.Amount(q, r)
		used := int64(0)
		if nodeCapacity > 0 {
			used = int64(float64(nodeUsed) * float64(zc) / float64(nodeCapacity))
		}
		v := zc - zc*(100-reclaimPercent)/100 - used
		v = min(max(v, 0), zc*capPercent/100)
		zones[z.Name] = framework.ExtendedQuantity(v, r)
	}
	return zones
}
