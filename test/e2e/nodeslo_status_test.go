package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// TestNodeSLOStatusSaysWhatIsApplied: the agent writes what the node applies of its NodeSLO into the NodeSLO's
// status. With the defaults CPU idle is applied (this kernel has cpu.idle), and the runtime hook's OOM order is
// PermissionDenied for the one capability the local node cannot give the agent. Turning on resctrl QoS, which
// this machine lacks (no RDT, no resctrl file system), makes its condition False with reason Unsupported and
// NodeSLOApplied False naming it, for the NodeSLO's new generation; `kubectl get nodeslo` shows it, and the agent's
// gleaner_agent_nodeslo_applied says 0 for it. Turned off again, the condition goes.
func TestNodeSLOStatusSaysWhatIsApplied(t *testing.T) {
	e := suite.Env(t)

	// CPU idle is applied. The runtime hook is not, for want of a privilege: the local node's agent lacks
	// CAP_SYS_RESOURCE (config/local/agent.yaml: this machine cannot grant it), so the OOM order cannot lower the
	// oom_score_adj of the agent's own container, which started before the agent, below the runtime's floor.
	slo := waitNodeSLOStatus(e, "CPUIdle applied, RuntimeHook PermissionDenied on the agent's own oom_score_adj", func(slo *slov1alpha1.NodeSLO) bool {
		return hasCondition(slo, slov1alpha1.NodeSLOCPUIdle, metav1.ConditionTrue, slov1alpha1.NodeSLOReasonApplied) &&
			hasCondition(slo, slov1alpha1.NodeSLORuntimeHook, metav1.ConditionFalse, slov1alpha1.NodeSLOReasonPermissionDenied, "oom_score_adj", "gleaner-system/gleaner-agent-") &&
			hasCondition(slo, slov1alpha1.NodeSLOApplied, metav1.ConditionFalse, slov1alpha1.NodeSLOReasonNotApplied, "RuntimeHook (PermissionDenied)")
	})
	t.Logf("with the defaults: %s", conditionsText(slo))

	setSLOConfig(e, "resource-qos-config", `{"clusterStrategy": {"beClass": {"resctrlQOS": {"enable": true}}}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			q := spec.ResourceQOSStrategy
			return q != nil && q.BEClass != nil && q.BEClass.ResctrlQOS != nil && ptr.Deref(q.BEClass.ResctrlQOS.Enable, false),
				fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", q)
		})
	slo = waitNodeSLOStatus(e, "Resctrl Unsupported, and Applied naming it", func(slo *slov1alpha1.NodeSLO) bool {
		return hasCondition(slo, slov1alpha1.NodeSLOResctrl, metav1.ConditionFalse, slov1alpha1.NodeSLOReasonUnsupported, "resctrl") &&
			hasCondition(slo, slov1alpha1.NodeSLOApplied, metav1.ConditionFalse, slov1alpha1.NodeSLOReasonNotApplied, "Resctrl (Unsupported)")
	})
	t.Logf("with resctrl on: %s", conditionsText(slo))

	out := e.Kubectl("get", "nodeslo", localcluster.NodeName, "-o", "wide")
	header := regexp.MustCompile(`(?m)^NAME\s+APPLIED\s+REASON\s+MESSAGE\s+AGE$`)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(localcluster.NodeName) + `\s+False\s+NotApplied\s+.*Resctrl \(Unsupported\)`)
	if !header.MatchString(out) || !row.MatchString(out) {
		t.Errorf("kubectl get nodeslo -o wide:\n%s\nwant the columns APPLIED, REASON, MESSAGE and the node False, NotApplied, naming Resctrl", out)
	}
	const gauge = `gleaner_agent_nodeslo_applied{condition="Resctrl"} 0`
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		return strings.Contains(agentMetrics(e), gauge), "no " + gauge + " in the agent's metrics"
	})

	setSLOConfig(e, "resource-qos-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		q := spec.ResourceQOSStrategy
		return q == nil || q.BEClass == nil || q.BEClass.ResctrlQOS == nil, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", q)
	})
	waitNodeSLOStatus(e, "Resctrl's condition gone", func(slo *slov1alpha1.NodeSLO) bool {
		return meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOResctrl) == nil &&
			!strings.Contains(conditionsText(slo), "Resctrl")
	})
}

// waitNodeSLOStatus waits up to a minute until the local node's NodeSLO has a status of its current generation for
// which ok holds (what says what ok waits for), and returns it.
func waitNodeSLOStatus(e *Env, what string, ok func(*slov1alpha1.NodeSLO) bool) *slov1alpha1.NodeSLO {
	e.t.Helper()
	return waitNodeSLOStatusFor(e, time.Minute, what, ok)
}

// waitNodeSLOStatusFor is waitNodeSLOStatus waiting up to timeout.
func waitNodeSLOStatusFor(e *Env, timeout time.Duration, what string, ok func(*slov1alpha1.NodeSLO) bool) *slov1alpha1.NodeSLO {
	e.t.Helper()
	slo := &slov1alpha1.NodeSLO{}
	e.Eventually(timeout, func(ctx context.Context) (bool, string) {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, slo); err != nil {
			return false, err.Error()
		}
		if slo.Status.ObservedGeneration != slo.Generation {
			return false, fmt.Sprintf("NodeSLO generation %d, status of generation %d: %s", slo.Generation, slo.Status.ObservedGeneration, conditionsText(slo))
		}
		return ok(slo), "waiting for " + what + "; status: " + conditionsText(slo)
	})
	return slo
}

// hasCondition reports whether slo's status has the condition of type with status and reason, its message holding
// every one of parts.
func hasCondition(slo *slov1alpha1.NodeSLO, typ string, status metav1.ConditionStatus, reason string, parts ...string) bool {
	c := meta.FindStatusCondition(slo.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason {
		return false
	}
	for _, p := range parts {
		if !strings.Contains(c.Message, p) {
			return false
		}
	}
	return true
}

// conditionsText is slo's conditions, one "Type=Status/Reason (message)" each.
func conditionsText(slo *slov1alpha1.NodeSLO) string {
	var s []string
	for _, c := range slo.Status.Conditions {
		s = append(s, fmt.Sprintf("%s=%s/%s (%s)", c.Type, c.Status, c.Reason, c.Message))
	}
	if len(s) == 0 {
		return "no conditions"
	}
	return strings.Join(s, "; ")
}
