// Package demo places the demo workload of `make run` (config/demo) on the node it runs on: a latency-sensitive
// service, and batch pods that run on the kubernetes.io/batch-cpu and batch-memory Gleaner publishes.
//
// What the node can offer batch pods depends on the machine: its CPUs, the control plane and every other program
// on it, the service's measured usage. So the batch pods are sized from what the node publishes once the agent has
// measured the service (until then the service counts at its request, and a small node offers nothing), and Place
// waits until they run, or says plainly why they cannot and what would change it.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The objects of config/demo that Place works with.
const (
	// Namespace is the demo's namespace.
	Namespace = "gleaner-demo"
	// ServiceSelector selects the latency-sensitive service's pods.
	ServiceSelector = "app=ls-service"
	// BatchDeployment is the Deployment of the batch pods.
	BatchDeployment = "batch-burner"
	// BatchSelector selects the batch pods.
	BatchSelector = "app=batch-burner"
)

// The least a batch pod is sized to: a burner that burns less shows nothing worth a look.
const (
	minCPU    = 50       // millicores of batch-cpu
	minMemory = 32 << 20 // bytes of batch-memory
)

// pollInterval is how often Place reads the node, the NodeMetric and the pods.
const pollInterval = time.Second

// Size is what one batch pod asks.
type Size struct {
	// CPU is in millicores of kubernetes.io/batch-cpu.
	CPU int64
	// Memory is in bytes of kubernetes.io/batch-memory.
	Memory int64
}

func (s Size) String() string {
	return fmt.Sprintf("%dm of batch-cpu and %dMi of batch-memory", s.CPU, s.Memory>>20)
}

// sizeFor returns what each of pods batch pods asks: what the manifest asks, or less, so that together they take at
// most two thirds of what the node publishes; the third left over is room for the published value to move between
// the sizing and the scheduling. ok is false when that leaves a pod less than minCPU or minMemory.
func sizeFor(published, manifest Size, pods int64) (Size, bool) {
	s := Size{
		CPU:    min(manifest.CPU, published.CPU*2/3/pods),
		Memory: min(manifest.Memory, published.Memory*2/3/pods),
	}
	s.Memory = s.Memory &^ (1<<20 - 1) // whole MiB read better
	return s, s.CPU >= minCPU && s.Memory >= minMemory
}

// Placer sizes the demo's batch pods to what the node offers and waits until they run.
type Placer struct {
	// Client reads the node, its NodeMetric and the demo's pods, and changes the batch Deployment. Its scheme must
	// hold the built-in kinds and Gleaner's.
	Client client.Client
	// Node is the node the demo runs on.
	Node string
	// Out receives a line for each step and for each new value the node publishes.
	Out io.Writer
	// PublishTimeout bounds the wait for the node to publish enough for the batch pods from a NodeMetric that measured
	// the service; RunTimeout the wait for the pods to run after that.
	PublishTimeout, RunTimeout time.Duration
	// Prober, when set, reads the service's latency before the batch pods start, for Prober.Outcome to compare with.
	Prober *Prober
}

// Place waits until the node publishes batch resources from a NodeMetric that measured the service, sizes the batch
// pods to them (see sizeFor) and waits until every batch pod runs. It returns the size, or an error saying why the
// pods do not run and what would change it: a *NoRoomError when the node offers too little, in which case the pods
// are sized to the least they can be, so that they start as soon as the node offers that.
func (p Placer) Place(ctx context.Context) (Size, error) {
	dep := &appsv1.Deployment{}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
		return Size{}, fmt.Errorf("reading the demo's batch Deployment: %w", err)
	}
	manifest, err := podSize(&dep.Spec.Template.Spec)
	if err != nil {
		return Size{}, err
	}
	pods := int64(1)
	if dep.Spec.Replicas != nil {
		pods = int64(*dep.Spec.Replicas)
	}
	p.measureAlone(ctx)
	size, err := p.waitForRoom(ctx, manifest, pods)
	var noRoom *NoRoomError
	if errors.As(err, &noRoom) {
		least := Size{CPU: minCPU, Memory: minMemory}
		if rerr := p.resize(ctx, least); rerr != nil {
			return Size{}, errors.Join(err, rerr)
		}
		p.logf("the batch pods now ask %s each, and start once the node publishes %s", least, Need(pods))
		return Size{}, err
	}
	if err != nil {
		return Size{}, err
	}
	if size != manifest {
		p.logf("each batch pod asks %s: %d of what config/demo asks (%s) take more than two thirds of what the node publishes",
			size, pods, manifest)
	}
	if err := p.resize(ctx, size); err != nil {
		return Size{}, err
	}
	return size, p.waitRunning(ctx, size, pods)
}

func (p Placer) logf(format string, args ...any) {
	fmt.Fprintf(p.Out, "demo: "+format+"\n", args...)
}

// waitForRoom waits until the node's batch resources come from a NodeMetric that measured the service, and are
// enough for the batch pods.
func (p Placer) waitForRoom(ctx context.Context, manifest Size, pods int64) (Size, error) {
	p.logf("waiting for gleaner-agent to measure the service and gleaner-manager to publish batch resources from it")
	var (
		measuredAt *metav1.Time // the first NodeMetric that measured the service
		last       Size
		size       Size
		noRoom     *NoRoomError
	)
	err := wait.PollUntilContextTimeout(ctx, pollInterval, p.PublishTimeout, true, func(ctx context.Context) (bool, error) {
		if measuredAt == nil {
			t, err := p.serviceMeasured(ctx)
			if err != nil || t == nil {
				return false, nil //nolint:nilerr // not measured yet, or a read that failed once: poll again
			}
			measuredAt = t
			p.logf("the NodeMetric of %s measures the service", t.UTC().Format("15:04:05"))
		}
		node := &corev1.Node{}
		if err := p.Client.Get(ctx, client.ObjectKey{Name: p.Node}, node); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		exp := &slov1alpha1.NodeResourceExplanation{}
		if err := p.Client.Get(ctx, client.ObjectKey{Name: p.Node}, exp); err != nil {
			return false, nil //nolint:nilerr // not written yet (it follows the node's write): poll again
		}
		d := derivation(exp, slov1alpha1.BatchCPU)
		if d == nil || d.MetricTime == nil || d.MetricTime.Before(measuredAt) {
			return false, nil
		}
		published := Size{
			CPU:    quantity(node.Status.Allocatable, slov1alpha1.BatchCPU),
			Memory: quantity(node.Status.Allocatable, slov1alpha1.BatchMemory),
		}
		if published != last {
			p.logf("node %s publishes %s", p.Node, published)
			last = published
		}
		var ok bool
		size, ok = sizeFor(published, manifest, pods)
		if !ok {
			first := noRoom == nil
			noRoom = &NoRoomError{Node: p.Node, Published: published, Pods: pods, CPU: d, Memory: derivation(exp, slov1alpha1.BatchMemory)}
			if first {
				p.logf("%v.\nWaiting up to %s in all for the node to publish more", noRoom, p.PublishTimeout)
			}
		}
		return ok, nil
	})
	switch {
	case err == nil:
		return size, nil
	case ctx.Err() != nil:
		return Size{}, ctx.Err()
	case noRoom != nil:
		return Size{}, noRoom
	case measuredAt == nil:
		return Size{}, fmt.Errorf("gleaner-agent's NodeMetric %s did not measure the demo service within %s: is gleaner-agent running "+
			"(kubectl -n gleaner-system get pods), and is the service Running (kubectl -n %s get pods)?", p.Node, p.PublishTimeout, Namespace)
	default:
		return Size{}, fmt.Errorf("gleaner-manager did not publish batch resources from a NodeMetric that measured the service within %s: "+
			"is gleaner-manager running (kubectl -n gleaner-system get pods)?", p.PublishTimeout)
	}
}

// serviceMeasured returns the update time of the node's NodeMetric when it lists every running pod of the service,
// nil when it does not yet.
func (p Placer) serviceMeasured(ctx context.Context) (*metav1.Time, error) {
	pods := &corev1.PodList{}
	sel, err := labels.Parse(ServiceSelector)
	if err != nil {
		return nil, err
	}
	if err := p.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	nm := &slov1alpha1.NodeMetric{}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: p.Node}, nm); err != nil {
		return nil, err
	}
	measured := map[string]bool{}
	for i := range nm.Status.PodRecords() {
		measured[nm.Status.PodRecord(i).UID] = true
	}
	running := 0
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		running++
		if !measured[string(pod.UID)] {
			return nil, nil
		}
	}
	if running == 0 || nm.Status.UpdateTime == nil {
		return nil, nil
	}
	return nm.Status.UpdateTime, nil
}

// resize sets what the batch pods ask and the load they burn. The Deployment's strategy is Recreate, so pods of
// the old size, Pending or not, are replaced at once.
func (p Placer) resize(ctx context.Context, s Size) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
			return err
		}
		if have, err := podSize(&dep.Spec.Template.Spec); err == nil && have == s {
			return nil
		}
		c := &dep.Spec.Template.Spec.Containers[0]
		cpu, mem := *resource.NewQuantity(s.CPU, resource.DecimalSI), *resource.NewQuantity(s.Memory, resource.BinarySI)
		for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			l[slov1alpha1.BatchCPU], l[slov1alpha1.BatchMemory] = cpu, mem
		}
		c.Args = setLoad(c.Args, s.CPU)
		return p.Client.Update(ctx, dep)
	})
	if err != nil {
		return fmt.Errorf("resizing the demo's batch pods to %s: %w", s, err)
	}
	return nil
}

// setLoad replaces the burner's --load argument with millicores.
func setLoad(args []string, milli int64) []string {
	out := []string{fmt.Sprintf("--load=%dm", milli)}
	for _, a := range args {
		if !strings.HasPrefix(a, "--load") {
			out = append(out, a)
		}
	}
	return out
}

// waitRunning waits until pods batch pods of the size run.
func (p Placer) waitRunning(ctx context.Context, s Size, pods int64) error {
	sel, err := labels.Parse(BatchSelector)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, p.RunTimeout, true, func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := p.Client.List(ctx, list, client.InNamespace(Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		var running int64
		var waiting []string
		for _, pod := range list.Items {
			if have, err := podSize(&pod.Spec); err != nil || have != s || pod.DeletionTimestamp != nil {
				continue
			}
			if pod.Status.Phase == corev1.PodRunning {
				running++
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%s %s: %s", pod.Name, pod.Status.Phase, why(&pod)))
		}
		last = fmt.Sprintf("%d of %d batch pods running", running, pods)
		if len(waiting) > 0 {
			last += "; " + strings.Join(waiting, "; ")
		}
		return running == pods, nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("the demo's batch pods do not run after %s: %s", p.RunTimeout, last)
	}
	p.logf("%d batch pods running, each on %s", pods, s)
	return nil
}

// why is the reason a pod does not run: the scheduler's message, else the waiting reason of a container.
func why(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return c.Message
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			return cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
		}
	}
	return "starting"
}

// podSize reads the batch resources the first container asks.
func podSize(spec *corev1.PodSpec) (Size, error) {
	if len(spec.Containers) == 0 {
		return Size{}, errors.New("the demo's batch pods have no container")
	}
	r := spec.Containers[0].Resources.Requests
	return Size{CPU: quantity(r, slov1alpha1.BatchCPU), Memory: quantity(r, slov1alpha1.BatchMemory)}, nil
}

func quantity(l corev1.ResourceList, r corev1.ResourceName) int64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	return q.Value()
}

// derivation is the node's explanation of resource r, nil when there is none.
func derivation(exp *slov1alpha1.NodeResourceExplanation, r corev1.ResourceName) *slov1alpha1.ResourceDerivation {
	x := &exp.Status
	for i := range x.Resources {
		if x.Resources[i].Resource == r {
			return &x.Resources[i]
		}
	}
	return nil
}

// NewClient returns a client for the cluster of a kubeconfig that knows the built-in kinds and Gleaner's, as
// Placer needs.
func NewClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding the built-in kinds to the scheme: %w", err)
	}
	if err := slov1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", slov1alpha1.GroupVersion, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
