package demo

import (
	"fmt"
	"strings"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Need is the least the node must publish for pods batch pods to run: each the least it is sized to, with a third
// to spare (see sizeFor).
func Need(pods int64) Size {
	return Size{CPU: (minCPU*pods*3 + 1) / 2, Memory: minMemory * pods * 3 / 2}
}

// NoRoomError is Place's answer when the node offers too little for the demo's batch pods: what it publishes, and
// gleaner-manager's derivation of it, which says why.
type NoRoomError struct {
	// Node is the node.
	Node string
	// Published is what the node publishes.
	Published Size
	// Pods is how many batch pods the demo runs.
	Pods int64
	// CPU and Memory are the node's derivations of batch-cpu and batch-memory; nil when the node has none.
	CPU, Memory *slov1alpha1.ResourceDerivation
}

// Error says what the node offers, what the pods need, the calculation that gave the short one, and what would
// change it.
func (e *NoRoomError) Error() string {
	var b strings.Builder
	need := Need(e.Pods)
	fmt.Fprintf(&b, "the demo's %d batch pods cannot run: node %s publishes %s; they need at least %s "+
		"(%s each, and a third to spare)", e.Pods, e.Node, e.Published, need, Size{CPU: minCPU, Memory: minMemory})
	for _, d := range []struct {
		d     *slov1alpha1.ResourceDerivation
		short bool
	}{{e.CPU, e.Published.CPU < need.CPU}, {e.Memory, e.Published.Memory < need.Memory}} {
		if d.short && d.d != nil {
			b.WriteString(".\n" + explain(d.d))
		}
	}
	return b.String()
}

// explain says why a resource has its value and what would raise it, from gleaner-manager's terms.
func explain(d *slov1alpha1.ResourceDerivation) string {
	if d.Value == nil {
		return fmt.Sprintf("%s is not offered: %s", d.Resource, d.Reason)
	}
	terms := map[string]slov1alpha1.DerivationTerm{}
	for _, t := range d.Terms {
		terms[t.Name] = t
	}
	val := func(name string) string {
		t, ok := terms[name]
		if !ok {
			return "?"
		}
		return t.Value.String()
	}
	r := "CPU"
	if d.Resource == slov1alpha1.BatchMemory {
		r = "memory"
	}
	s := fmt.Sprintf("%s = capacity %s - safetyMargin %s - systemUsed %s - hpUsed %s = %s, at least batchHeld %s. "+
		"What would raise it: less %s used outside pods on this machine (systemUsed: the control plane and every other "+
		"program), less used by the high-priority pods (hpUsed), or a smaller safety margin",
		d.Resource, val("capacity"), val("safetyMargin"), val("systemUsed"), val("hpUsed"), val("calculated"),
		val("batchHeld"), r)
	if t, ok := terms["safetyMargin"]; ok {
		s += ", now " + t.Detail
	}
	key := "cpuReclaimThresholdPercent"
	if d.Resource == slov1alpha1.BatchMemory {
		key = "memoryReclaimThresholdPercent"
	}
	return s + fmt.Sprintf(": a higher %s in the colocation-config of `kubectl -n gleaner-system edit configmap "+
		"slo-controller-config`", key)
}
