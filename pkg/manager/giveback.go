package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// GiveBackOff is what the give-back writes into the SLO ConfigMap: every key whose plugins write on the Node objects,
// turned off. The manager then takes off the batch and mid resources (colocation-config), the CPU normalization
// ratio and the amplification ratio; its node webhook puts the raw allocatable back as the ratio goes.
func GiveBackOff() map[string]string {
	return map[string]string{
		sloconfig.ColocationConfigKey:            `{"enable": false}`,
		sloconfig.CPUNormalizationConfigKey:      `{"enable": false}`,
		sloconfig.ResourceAmplificationConfigKey: `{"enable": false}`,
	}
}

// giveBackAnnotations are the Node annotations the manager and its node webhook write, which the give-back waits to
// see gone. The agent's own (the CPU basic info and the kubelet's manager policies on the NodeResourceTopology and
// the Node) are not the manager's to take off: docs/operations.md lists them with what stays.
var giveBackAnnotations = []string{
	slov1alpha1.AnnotationCPUNormalizationRatio,
	slov1alpha1.AnnotationResourceAmplificationRatio,
	slov1alpha1.AnnotationRawAllocatable,
}

// LeftOnNode lists what the manager wrote on node and has not taken off yet: the batch and mid extended resources of
// its capacity and allocatable, and its annotations, sorted. Where the node's own label keeps CPU normalization on
// whatever the ConfigMap says, the ratio's entry says so: the manager will not take it off.
func LeftOnNode(node *corev1.Node) []string {
	var left []string
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for r := range list.rl {
			if isTierResource(r) {
				left = append(left, list.name+" "+string(r))
			}
		}
	}
	for _, k := range giveBackAnnotations {
		if _, ok := node.Annotations[k]; !ok {
			continue
		}
		entry := "annotation " + k
		if v := node.Labels[slov1alpha1.LabelCPUNormalizationEnabled]; k == slov1alpha1.AnnotationCPUNormalizationRatio && v == "true" {
			entry += " (kept by the node's label " + slov1alpha1.LabelCPUNormalizationEnabled + "=true: remove the label)"
		}
		left = append(left, entry)
	}
	slices.Sort(left)
	return left
}

// isTierResource says whether r is a batch or mid extended resource (kubernetes.io/batch-cpu, mid-memory, ...).
func isTierResource(r corev1.ResourceName) bool {
	return strings.HasPrefix(string(r), "kubernetes.io/batch-") || strings.HasPrefix(string(r), "kubernetes.io/mid-")
}

// GiveBack is the first step of an uninstall (the chart's pre-delete hook, config/uninstall for kustomize): it turns
// off, in the SLO ConfigMap namespace/name, every key whose plugins write on the Node objects (GiveBackOff), and
// waits until the running manager has taken what it wrote off every Node (LeftOnNode), looking every poll on clk,
// until ctx ends. The manager's own paths do the work, as when a user turns colocation off: its webhook, which puts
// back an amplified allocatable, is up only while the manager runs, so the give-back has to come before the uninstall
// deletes it. A missing ConfigMap is written as nothing: colocation is then off already, and the wait says whether
// the Nodes agree. What is left when ctx ends is the error, node by node; a Forbidden answer ends it at once (the
// Job's RBAC is missing, and waiting would not mend it).
func GiveBack(ctx context.Context, c kubernetes.Interface, clk clock.Clock, namespace, name string, poll time.Duration) error {
	logger := klog.FromContext(ctx)
	if err := turnOff(ctx, c, namespace, name); err != nil {
		return err
	}
	logger.Info("colocation, CPU normalization and amplification turned off; waiting for the manager to take them off the Nodes",
		"configMap", namespace+"/"+name)
	start := clk.Now()
	var left map[string][]string
	for {
		now, err := leftOnNodes(ctx, c)
		switch {
		case apierrors.IsForbidden(err):
			return err
		case err != nil && ctx.Err() == nil:
			logger.Info("listing the Nodes failed; trying again", "err", err)
		case err == nil && len(now) == 0:
			logger.Info("every Node is given back", "after", clk.Since(start).Round(time.Second))
			return nil
		case err == nil:
			left = now
		}
		select {
		case <-ctx.Done():
			return giveBackError(namespace, left, ctx.Err())
		case <-clk.After(poll):
		}
	}
}

// turnOff writes GiveBackOff into the ConfigMap, again on a conflict.
func turnOff(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		maps.Copy(cm.Data, GiveBackOff())
		_, err = c.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).Info("no SLO ConfigMap: colocation is off already", "configMap", namespace+"/"+name)
		return nil
	case err != nil:
		return fmt.Errorf("turning colocation off in ConfigMap %s/%s: %w", namespace, name, err)
	}
	return nil
}

// leftOnNodes is LeftOnNode of every Node that has something left, by name. The Nodes are listed a page at a time,
// so that the Job's memory does not grow with the cluster.
func leftOnNodes(ctx context.Context, c kubernetes.Interface) (map[string][]string, error) {
	left := map[string][]string{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		nodes, err := c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the Nodes: %w", err)
		}
		for i := range nodes.Items {
			if l := LeftOnNode(&nodes.Items[i]); len(l) > 0 {
				left[nodes.Items[i].Name] = l
			}
		}
		if nodes.Continue == "" {
			return left, nil
		}
		opts.Continue = nodes.Continue
	}
}

// giveBackError says what the manager had not taken off when the wait ended: left is the last list that answered,
// nil when none did.
func giveBackError(namespace string, left map[string][]string, cause error) error {
	if left == nil {
		return fmt.Errorf("the Nodes could not be read before the give-back's time ran out: %w", cause)
	}
	names := slices.Sorted(maps.Keys(left))
	const shown = 10
	var b strings.Builder
	for i, n := range names {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more nodes", len(names)-shown)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", n, strings.Join(left[n], ", "))
	}
	return fmt.Errorf("the manager did not take off the Nodes what it wrote (is it running? kubectl -n %s get pods): %s: %w",
		namespace, b.String(), cause)
}

// RunGiveBack is `gleaner-manager --give-back-nodes`: GiveBack of the options' SLO ConfigMap, with the options'
// client configuration, for at most timeout.
func RunGiveBack(ctx context.Context, opts *Options, timeout time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("--give-back-timeout %s: the wait needs a positive time", timeout)
	}
	cfg, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return GiveBack(ctx, c, clock.RealClock{}, opts.Namespace, opts.SLOConfigName, 5*time.Second)
}
