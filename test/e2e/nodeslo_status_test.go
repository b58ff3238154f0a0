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
	status := func(what string, ok func(*slov1alpha1.NodeSLO) (bool, string)) *slov1alpha1.NodeSLO {
		t.Helper()
		slo := &slov1alpha1.NodeSLO{}
		e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
			if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, slo); err != nil {
				return false, err.Error()
			}
			if slo.Status.ObservedGeneration != slo.Generation {
				return false, fmt.Sprintf("NodeSLO generation %d, status of generation %d: %s", slo.Generation, slo.Status.ObservedGeneration, conditionsText(slo))
			}
			good, why := ok(slo)
			return good, what + ": " + why + "; status: " + conditionsText(slo)
		})
		return slo
	}

	// CPU idle is applied. The runtime hook is not, for want of a privilege: the local node's agent lacks
	// CAP_SYS_RESOURCE (config/local/agent.yaml: this machine cannot grant it), so the OOM order cannot lower the
	// oom_score_adj of the agent's own container, which started before the agent, below the runtime's floor.
	slo := status("CPUIdle applied, RuntimeHook PermissionDenied", func(slo *slov1alpha1.NodeSLO) (bool, string) {
		idle := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOCPUIdle)
		hook := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLORuntimeHook)
		applied := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOApplied)
		return idle != nil && idle.Status == metav1.ConditionTrue &&
				hook != nil && hook.Status == metav1.ConditionFalse && hook.Reason == slov1alpha1.NodeSLOReasonPermissionDenied &&
				strings.Contains(hook.Message, "oom_score_adj") && strings.Contains(hook.Message, "gleaner-system/gleaner-agent-") &&
				applied != nil && applied.Status == metav1.ConditionFalse && strings.Contains(applied.Message, "RuntimeHook (PermissionDenied)"),
			"CPUIdle not True, or RuntimeHook not PermissionDenied on the agent's own oom_score_adj"
	})
	t.Logf("with the defaults: %s", conditionsText(slo))

	setSLOConfig(e, "resource-qos-config", `{"clusterStrategy": {"beClass": {"resctrlQOS": {"enable": true}}}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			q := spec.ResourceQOSStrategy
			ok := q != nil && q.BEClass != nil && q.BEClass.ResctrlQOS != nil && q.BEClass.ResctrlQOS.Enable != nil && *q.BEClass.ResctrlQOS.Enable
			return ok, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", q)
		})
	slo = status("Resctrl unsupported", func(slo *slov1alpha1.NodeSLO) (bool, string) {
		c := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOResctrl)
		a := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOApplied)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == slov1alpha1.NodeSLOReasonUnsupported && c.Message != "" &&
			a != nil && a.Status == metav1.ConditionFalse && strings.Contains(a.Message, "Resctrl (Unsupported)"), "no Resctrl False Unsupported yet"
	})
	t.Logf("with resctrl on: %s", conditionsText(slo))

	out := e.Kubectl("get", "nodeslo", localcluster.NodeName, "-o", "wide")
	if !regexp.MustCompile(`(?m)^NAME\s+APPLIED\s+REASON\s+MESSAGE\s+AGE$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(localcluster.NodeName)+`\s+False\s+NotApplied\s+.*Resctrl \(Unsupported\)`).MatchString(out) {
		t.Errorf("kubectl get nodeslo -o wide:\n%s\nwant the columns APPLIED, REASON, MESSAGE and the node False, NotApplied, naming Resctrl", out)
	}
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		m := agentMetrics(e)
		return strings.Contains(m, `gleaner_agent_nodeslo_applied{condition="Resctrl"} 0`), "no gleaner_agent_nodeslo_applied{condition=\"Resctrl\"} 0 in the agent's metrics"
	})

	setSLOConfig(e, "resource-qos-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		q := spec.ResourceQOSStrategy
		return q == nil || q.BEClass == nil || q.BEClass.ResctrlQOS == nil, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", q)
	})
	status("Resctrl gone", func(slo *slov1alpha1.NodeSLO) (bool, string) {
		a := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOApplied)
		return meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOResctrl) == nil && a != nil && !strings.Contains(a.Message, "Resctrl"),
			"Resctrl's condition still there"
	})
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
