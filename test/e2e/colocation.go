package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// SLOConfigName is the ConfigMap in GleanerNamespace that config/samples deploys: the colocation configuration.
const SLOConfigName = "slo-controller-config"

// MakeRoomForBatch makes the node publish at least milli millicores of batch-cpu, and returns what it publishes,
// or fails the test saying why it could not. The single node also runs the control plane and the tests themselves, and the sample configuration
// keeps 40% of the CPU as a safety margin (cpuReclaimThresholdPercent 60), so on a 2-core machine batch-cpu is
// often 0; a test that runs a batch pod must not depend on that. Until the test ends the colocation config reclaims
// everything the system and the high-priority pods leave (cpuReclaimThresholdPercent 100); the caller removes what
// it no longer needs of its own high-priority load first.
func (e *Env) MakeRoomForBatch(milli int64) int64 {
	e.t.Helper()
	e.setColocation(map[string]any{"cpuReclaimThresholdPercent": 100})
	var published int64
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := node.Status.Allocatable[slov1alpha1.BatchCPU]
		published = q.Value()
		// The scheduler counts every pod bound to the node until it is gone: an earlier test's batch pod that still
		// terminates (slow on the emulated v2 node) holds its batch-cpu, and a new pod would stay Pending.
		held, holders, err := e.batchCPUHeld(ctx)
		if err != nil {
			return false, err.Error()
		}
		return published-held >= milli, fmt.Sprintf("batch-cpu %s, %d of it requested by pods on the node %v; want %d free with no safety margin: %s",
			q.String(), held, holders, milli, e.derivation(ctx, node, slov1alpha1.BatchCPU))
	})
	return published
}

// batchCPUFree says whether the node has milli of batch-cpu that no pod bound to it requests, and what it has.
func (e *Env) batchCPUFree(milli int64) (bool, string) {
	e.t.Helper()
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	q := node.Status.Allocatable[slov1alpha1.BatchCPU]
	held, holders, err := e.batchCPUHeld(e.Ctx)
	if err != nil {
		return false, err.Error()
	}
	return q.Value()-held >= milli, fmt.Sprintf("batch-cpu %s, %d of it requested by pods on the node %v; want %d free", q.String(), held, holders, milli)
}

// batchCPUHeld is what the pods bound to the node, terminating ones included, request of batch-cpu, and which
// pods those are.
func (e *Env) batchCPUHeld(ctx context.Context) (int64, []string, error) {
	pods, err := e.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + localcluster.NodeName})
	if err != nil {
		return 0, nil, err
	}
	var held int64
	var holders []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var req int64
		for _, c := range p.Spec.Containers {
			q := c.Resources.Requests[slov1alpha1.BatchCPU]
			req += q.Value()
		}
		if req > 0 {
			held += req
			holders = append(holders, p.Namespace+"/"+p.Name)
		}
	}
	return held, holders, nil
}

// setColocation overrides fields of the colocation config until the test ends, when the config is put back.
func (e *Env) setColocation(fields map[string]any) {
	e.t.Helper()
	key := client.ObjectKey{Namespace: GleanerNamespace, Name: SLOConfigName}
	var cm corev1.ConfigMap
	if err := e.Client.Get(e.Ctx, key, &cm); err != nil {
		e.t.Fatalf("reading the colocation config: %v", err)
	}
	original := cm.Data[sloconfig.ColocationConfigKey]
	config := map[string]any{}
	if err := json.Unmarshal([]byte(original), &config); err != nil {
		e.t.Fatalf("parsing %s of ConfigMap %s: %v", sloconfig.ColocationConfigKey, key, err)
	}
	for k, v := range fields {
		config[k] = v
	}
	b, err := json.Marshal(config)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		var cm corev1.ConfigMap
		if err := e.Client.Get(context.Background(), key, &cm); err != nil {
			e.t.Errorf("putting the colocation config back: %v", err)
			return
		}
		cm.Data[sloconfig.ColocationConfigKey] = original
		if err := e.Client.Update(context.Background(), &cm); err != nil {
			e.t.Errorf("putting the colocation config back: %v", err)
		}
	})
	cm.Data[sloconfig.ColocationConfigKey] = string(b)
	if err := e.Client.Update(e.Ctx, &cm); err != nil {
		e.t.Fatalf("changing the colocation config: %v", err)
	}
}

// derivation is the terms gleaner-manager gives for the node's resource r, as `kubectl glean explain` shows them,
// from the node's NodeResourceExplanation; it says so when the explanation is of other values than the node's.
func (e *Env) derivation(ctx context.Context, node *corev1.Node, r corev1.ResourceName) string {
	var exp slov1alpha1.NodeResourceExplanation
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &exp); err != nil {
		return "no explanation of the node yet: " + err.Error()
	}
	x := exp.Status
	for _, d := range x.Resources {
		if d.Resource != r {
			continue
		}
		if d.Reason != "" {
			return d.Reason
		}
		terms := make([]string, 0, len(d.Terms))
		for _, t := range d.Terms {
			terms = append(terms, fmt.Sprintf("%s %s (%s)", t.Name, t.Value.String(), t.Detail))
		}
		lag := ""
		if q, ok := node.Status.Allocatable[r]; d.Value != nil && (!ok || q.Cmp(*d.Value) != 0) {
			lag = fmt.Sprintf(" (explains %s, not the node's value: the explanation lags)", d.Value.String())
		}
		return fmt.Sprintf("strategy %s; %s%s", x.Strategy, strings.Join(terms, ", "), lag)
	}
	return "the explanation has no " + string(r)
}
