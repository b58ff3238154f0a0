package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// What the demo shows of Gleaner's point: the service's latency with the batch pods beside it against its latency
// alone, and how busy the node is.

// StatsPort is the port the demo service serves GET /stats on (config/demo/ls-service.yaml, test/workloads/lsservice).
const StatsPort = 8080

// AnnotationLatencyAlone is the batch Deployment's annotation that keeps the service's latency read before the
// batch pods started (Latency.encode), so that a report printed later, by another process, can compare with it.
const AnnotationLatencyAlone = "demo.gleaner.sh/service-latency-alone"

// Latency is the part of the demo service's GET /stats the demo shows: its latency over its last requests.
type Latency struct {
	// Count is how many requests the figures cover.
	Count int `json:"count"`
	// P50 and P99 are the median and 99th percentile, in milliseconds.
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
}

func (l Latency) String() string {
	return fmt.Sprintf("p50 %.2fms, p99 %.2fms over its last %d requests", l.P50, l.P99, l.Count)
}

func (l Latency) encode() string {
	return fmt.Sprintf("p50Ms=%g,p99Ms=%g,count=%d", l.P50, l.P99, l.Count)
}

func decodeLatency(s string) (Latency, error) {
	var l Latency
	seen := 0
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Latency{}, fmt.Errorf("%q is not key=value", kv)
		}
		var err error
		switch k {
		case "p50Ms":
			l.P50, err = strconv.ParseFloat(v, 64)
		case "p99Ms":
			l.P99, err = strconv.ParseFloat(v, 64)
		case "count":
			l.Count, err = strconv.Atoi(v)
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			return Latency{}, fmt.Errorf("%s: %w", kv, err)
		}
		seen++
	}
	if seen != 3 {
		return Latency{}, fmt.Errorf("%q does not have p50Ms, p99Ms and count", s)
	}
	return l, nil
}

// Prober reads the demo service's latency.
type Prober struct {
	// Client lists the service's pods.
	Client client.Client
	// HTTP asks each pod; its timeout bounds a read.
	HTTP *http.Client
	// Port is the pods' stats port; 0 is StatsPort.
	Port int
}

// ServiceLatency returns the latency of the demo service's running pod with the highest p99 (the pods are reached
// at their IP: the demo's node is this machine).
func (p Prober) ServiceLatency(ctx context.Context) (Latency, error) {
	sel, err := labels.Parse(ServiceSelector)
	if err != nil {
		return Latency{}, err
	}
	pods := &corev1.PodList{}
	if err := p.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return Latency{}, fmt.Errorf("listing the demo service's pods: %w", err)
	}
	var worst *Latency
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			continue
		}
		l, err := p.podLatency(ctx, pod)
		if err != nil {
			return Latency{}, err
		}
		if worst == nil || l.P99 > worst.P99 {
			worst = &l
		}
	}
	if worst == nil {
		return Latency{}, fmt.Errorf("no running pod of the demo service (%s in %s) has an IP yet", ServiceSelector, Namespace)
	}
	return *worst, nil
}

func (p Prober) podLatency(ctx context.Context, pod *corev1.Pod) (Latency, error) {
	port := p.Port
	if port == 0 {
		port = StatsPort
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + "/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Latency{}, err
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return Latency{}, fmt.Errorf("reading the latency of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Latency{}, fmt.Errorf("reading the latency of pod %s/%s: %s answered %s", pod.Namespace, pod.Name, url, resp.Status)
	}
	var l Latency
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return Latency{}, fmt.Errorf("reading the latency of pod %s/%s: decoding %s: %w", pod.Namespace, pod.Name, url, err)
	}
	if l.Count == 0 {
		return Latency{}, fmt.Errorf("pod %s/%s has served no request yet", pod.Namespace, pod.Name)
	}
	return l, nil
}

// aloneRequests is how many requests the service's latency alone must cover: half the demo service's window.
const aloneRequests = 500

// aloneWait bounds how long Place waits for the service to have served aloneRequests (at its 50 per second, 10 s).
const aloneWait = time.Minute

// measureAlone reads the service's latency while no batch pod runs, once it covers aloneRequests requests, and keeps
// it on the batch Deployment for Outcome. It only says what it could not do: the demo goes on without the
// comparison.
func (p Placer) measureAlone(ctx context.Context) {
	if p.Prober == nil {
		return
	}
	var l Latency
	var last error
	// The checks use ctx, not the poll's context (see WaitBeside).
	err := wait.PollUntilContextTimeout(ctx, pollInterval, aloneWait, true, func(context.Context) (bool, error) {
		if running, err := p.batchRunning(ctx); err != nil || running != "" {
			if err == nil {
				err = fmt.Errorf("batch pod %s runs already", running)
			}
			return false, err
		}
		l, last = p.Prober.ServiceLatency(ctx)
		if last == nil && l.Count < aloneRequests {
			last = fmt.Errorf("the service has served %d requests, %d wanted", l.Count, aloneRequests)
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w: %w", err, last)
	}
	if err == nil {
		err = recordAlone(ctx, p.Client, l)
	}
	if err != nil {
		p.logf("the service's latency alone is not measured (the report will not compare with it): %v", err)
		return
	}
	p.logf("the service alone: %s", l)
}

// batchRunning returns the name of a batch pod running on the demo's node, "" when none runs.
func (p Placer) batchRunning(ctx context.Context) (string, error) {
	sel, err := labels.Parse(BatchSelector)
	if err != nil {
		return "", err
	}
	pods := &corev1.PodList{}
	if err := p.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", fmt.Errorf("listing the batch pods: %w", err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == p.Node && pod.Status.Phase == corev1.PodRunning {
			return pod.Name, nil
		}
	}
	return "", nil
}

// recordAlone keeps l on the batch Deployment as the service's latency alone.
func recordAlone(ctx context.Context, c client.Client, l Latency) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
			return err
		}
		if dep.Annotations == nil {
			dep.Annotations = map[string]string{}
		}
		dep.Annotations[AnnotationLatencyAlone] = l.encode()
		return c.Update(ctx, dep)
	})
}

// Outcome says, in a few lines, what the demo shows: the service's latency now against its latency before the
// batch pods started (kept on the batch Deployment by Place), the batch pods that run, and the node's CPU use from
// its NodeMetric. What cannot be read is said in its line; Outcome never fails.
func (p Prober) Outcome(ctx context.Context, node string) string {
	var b strings.Builder
	now, nowErr := p.ServiceLatency(ctx)
	alone, aloneErr := p.latencyAlone(ctx)
	switch {
	case nowErr != nil:
		fmt.Fprintf(&b, "service latency: not read: %v\n", nowErr)
	case aloneErr != nil:
		fmt.Fprintf(&b, "service latency now: %s (alone: %v)\n", now, aloneErr)
	default:
		fmt.Fprintf(&b, "service latency now:          %s\n", now)
		fmt.Fprintf(&b, "before the batch pods started: %s\n", alone)
		if alone.P99 > 0 {
			fmt.Fprintf(&b, "p99 now / p99 alone: %.2f\n", now.P99/alone.P99)
		}
	}
	b.WriteString(p.nodeUse(ctx, node))
	return b.String()
}

// serviceWindow is how long the demo service's /stats window takes to fill at its rate (1000 requests at 50 a
// second): after it, the latency covers only requests served beside the batch pods.
const serviceWindow = 20 * time.Second

// WaitBeside waits, at most timeout, until the service's latency covers only requests served since the batch pods
// started (serviceWindow after since) and the node's NodeMetric measures every batch pod running on the node, so
// that Outcome reads the node with its batch work. It returns what it still waited for when the time ran out.
func (p Prober) WaitBeside(ctx context.Context, node string, since time.Time, timeout time.Duration) error {
	var last error
	// The checks use ctx, not the poll's context: one cut short by the poll's deadline would hide what was waited for.
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		last = p.besideMeasured(ctx, node, since)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

func (p Prober) besideMeasured(ctx context.Context, node string, since time.Time) error {
	if wait := time.Until(since.Add(serviceWindow)); wait > 0 {
		return fmt.Errorf("the service's latency window still holds requests from before the batch pods (%s more)", wait.Round(time.Second))
	}
	sel, err := labels.Parse(BatchSelector)
	if err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := p.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing the batch pods: %w", err)
	}
	nm := &slov1alpha1.NodeMetric{}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: node}, nm); err != nil {
		return fmt.Errorf("reading the NodeMetric of node %s: %w", node, err)
	}
	measured := map[string]bool{}
	for i := range nm.Status.PodRecords() {
		measured[nm.Status.PodRecord(i).UID] = true
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == node && pod.Status.Phase == corev1.PodRunning && !measured[string(pod.UID)] {
			return fmt.Errorf("the NodeMetric of node %s does not measure batch pod %s yet", node, pod.Name)
		}
	}
	return nil
}

func (p Prober) latencyAlone(ctx context.Context) (Latency, error) {
	dep := &appsv1.Deployment{}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
		return Latency{}, fmt.Errorf("reading the demo's batch Deployment: %w", err)
	}
	v, ok := dep.Annotations[AnnotationLatencyAlone]
	if !ok {
		return Latency{}, errors.New("not measured (the batch pods were not placed by this demo)")
	}
	l, err := decodeLatency(v)
	if err != nil {
		return Latency{}, fmt.Errorf("annotation %s: %w", AnnotationLatencyAlone, err)
	}
	return l, nil
}

// nodeUse is the node's CPU use from its NodeMetric, with the batch pods' part and the count of batch pods running.
func (p Prober) nodeUse(ctx context.Context, node string) string {
	n := &corev1.Node{}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return fmt.Sprintf("node CPU: not read: %v\n", err)
	}
	nm := &slov1alpha1.NodeMetric{}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: node}, nm); apierrors.IsNotFound(err) {
		return fmt.Sprintf("node CPU: node %s has no NodeMetric yet\n", node)
	} else if err != nil {
		return fmt.Sprintf("node CPU: not read: %v\n", err)
	}
	capacity := n.Status.Capacity.Cpu().MilliValue()
	if nm.Status.NodeMetric == nil || nm.Status.UpdateTime == nil || capacity == 0 {
		return fmt.Sprintf("node CPU: node %s has no usage reported yet\n", node)
	}
	used := nm.Status.NodeMetric.NodeUsage.Cpu().MilliValue()
	var batch int64
	batchPods := 0
	for i := range nm.Status.PodRecords() {
		if pm := nm.Status.PodRecord(i); pm.Priority == slov1alpha1.PriorityBatch || pm.Priority == slov1alpha1.PriorityFree {
			cpu, _ := pm.Usage(corev1.ResourceCPU)
			batch += cpu.MilliValue()
			batchPods++
		}
	}
	return fmt.Sprintf("node CPU busy: %d%% of %d CPUs (%dm), %d%% by %d batch pods (NodeMetric of %s)\n",
		percent(used, capacity), capacity/1000, used, percent(batch, capacity), batchPods, nm.Status.UpdateTime.UTC().Format("15:04:05"))
}

func percent(part, whole int64) int64 { return (part*100 + whole/2) / whole }
