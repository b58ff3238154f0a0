package topologyreporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cpuinfo"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
)

// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=get;create;update

// Options tune the reporter.
type Options struct {
	// Enabled publishes the NodeResourceTopology (--report-topology).
	Enabled bool
	// Interval is how often the zones are computed again (--report-topology-interval); the object is written only
	// when they changed. A change of the Node's cpu or memory capacity or allocatable is published at once.
	Interval time.Duration
	// PodResourcesSocket is the kubelet's pod-resources socket (kubeletpolicy.Socket of --kubelet-root-dir), asked
	// at each report for the kubelet's CPU and memory manager policies; "" does not ask.
	PodResourcesSocket string
}

// DefaultOptions are the defaults of the agent's flags.
func DefaultOptions() Options { return Options{Enabled: true, Interval: time.Minute} }

// Validate reports an invalid field.
func (o Options) Validate() error {
	if o.Enabled && o.Interval <= 0 {
		return fmt.Errorf("--report-topology-interval must be positive, got %s", o.Interval)
	}
	return nil
}

// Resync is how long the reporter trusts that the object still holds what it last wrote: while the zones it
// computes do not change, it reads the object again only this often (to put back what someone edited or
// deleted). It is also how often it looks again for the CRD while the cluster has none.
const Resync = 10 * time.Minute

// Results of a report, the result label of gleaner_agent_topology_reports_total.
const (
	ReportWritten   = metrics.ReportWritten
	ReportUnchanged = metrics.ReportUnchanged
	ReportNotReady  = metrics.ReportNotReady
	ReportNoCRD     = "no_crd"
	ReportError     = metrics.ReportError
)

// ErrNoCRD is returned when the cluster has no NodeResourceTopology CRD (topology.node.k8s.io/v1alpha2).
var ErrNoCRD = errors.New("the cluster has no NodeResourceTopology CRD (topology.node.k8s.io/v1alpha2)")

// Reporter writes the NodeResourceTopology of one node. It is a Runnable.
type Reporter struct {
	client   client.Client
	states   statesinformer.States
	procRoot string
	sysRoot  string
	clock    clock.WithTicker
	metrics  *metrics.Metrics
	nodeName string
	opts     Options

	// The reporter's own state, used by the goroutine that reports only.
	topo      *topology.Topology
	lastZones []nrt.Zone
	lastNode  corev1.ResourceList
	lastSync  time.Time
	// lastAnnotations are the annotations last written (annotations), and loggedErr the error last logged about
	// each source of them (the CPU, the kubelet's managers).
	lastAnnotations map[string]string
	loggedErr       map[string]string
}

// New returns a reporter for nodeName that reads the host's topology under sysRoot (normally /sys) and the CPU model
// under procRoot (normally /proc).
func New(c client.Client, states statesinformer.States, procRoot, sysRoot string, clk clock.WithTicker, m *metrics.Metrics, nodeName string, opts Options) *Reporter {
	return &Reporter{client: c, states: states, procRoot: procRoot, sysRoot: sysRoot, clock: clk, metrics: m, nodeName: nodeName, opts: opts}
}

// Name is the reporter's name as a Runnable.
func (r *Reporter) Name() string { return "topology-reporter" }

// Start reports every Interval, and at once when the Node's cpu or memory capacity or allocatable changed, until ctx
// ends; while the cluster has no CRD it looks again every Resync. It always returns nil: a failed report is logged
// (a missing CRD or NUMA information once, until it changes) and counted, and the next one tries again.
func (r *Reporter) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("node", r.nodeName)
	ctx = klog.NewContext(ctx, log)
	nodeChanged := make(chan struct{}, 1)
	r.states.RegisterCallback(statesinformer.KindNode, r.Name(), func(statesinformer.Kind) {
		select {
		case nodeChanged <- struct{}{}:
		default:
		}
	})
	var quiet error // the condition (ErrNoCRD, ErrNoNUMA) last logged, once
	for {
		result, err := r.Report(ctx)
		switch {
		case errors.Is(err, ErrNoCRD) || errors.Is(err, ErrNoNUMA):
			sentinel := ErrNoCRD
			if errors.Is(err, ErrNoNUMA) {
				sentinel = ErrNoNUMA
			}
			if !errors.Is(quiet, sentinel) {
				log.Info("not publishing the NodeResourceTopology; checking again later", "reason", err.Error())
			}
			quiet = sentinel
		case err != nil:
			log.Error(err, "publishing the NodeResourceTopology")
			quiet = nil
		default:
			if quiet != nil {
				log.Info("publishing the NodeResourceTopology again", "result", result)
			}
			quiet = nil
		}
		wait := r.opts.Interval
		if result == ReportNoCRD {
			wait = Resync
		}
		if !r.wait(ctx, wait, nodeChanged) {
			return nil
		}
	}
}

// wait returns after d, or earlier when the Node's cpu or memory changed since the last report; false when ctx ended.
func (r *Reporter) wait(ctx context.Context, d time.Duration, nodeChanged <-chan struct{}) bool {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return true
		case <-nodeChanged:
			if r.lastNode != nil && !equality.Semantic.DeepEqual(r.lastNode, nodeResources(r.states.GetNode())) {
				return true
			}
		}
	}
}

// Report publishes the zones once and says what happened: ReportWritten (created or updated), ReportUnchanged
// (nothing to send), ReportNotReady (the Node is not known yet), ReportNoCRD (with ErrNoCRD) or ReportError with the
// error. Nothing is written when the host's topology cannot be read.
func (r *Reporter) Report(ctx context.Context) (string, error) {
	result, err := r.report(ctx)
	if err != nil && result != ReportNoCRD {
		result = ReportError
	}
	r.metrics.TopologyReports.WithLabelValues(result).Inc()
	return result, err
}

func (r *Reporter) report(ctx context.Context) (string, error) {
	node := r.states.GetNode()
	if node == nil {
		return ReportNotReady, nil
	}
	topo, err := topology.Refresh(r.sysRoot, r.topo)
	if err != nil {
		return ReportError, fmt.Errorf("reading the NUMA topology under %s: %w", r.sysRoot, err)
	}
	r.topo = topo
	zones, err := Zones(topo, node.Status.Capacity, rawAllocatable(node), r.requests())
	if err != nil {
		return ReportError, fmt.Errorf("computing the NUMA zones of node %q: %w", r.nodeName, err)
	}
	annotations := r.annotations(ctx)
	res := nodeResources(node)
	if r.lastZones != nil && equality.Semantic.DeepEqual(zones, r.lastZones) && maps.Equal(annotations, r.lastAnnotations) && r.clock.Since(r.lastSync) < Resync {
		r.lastNode = res
		return ReportUnchanged, nil
	}
	result, err := r.write(ctx, node, zones, annotations)
	if err != nil {
		return result, err
	}
	r.lastZones, r.lastNode, r.lastSync, r.lastAnnotations = zones, res, r.clock.Now(), annotations
	return result, nil
}

// annotations are the object's annotations that gleaner-manager reads: the node's CPU
// (slov1alpha1.AnnotationCPUBasicInfo, for CPU normalization) and the kubelet's CPU and memory manager policies (for
// amplification). What cannot be read is left out (the object keeps what it has), and its error is logged once.
func (r *Reporter) annotations(ctx context.Context) map[string]string {
	out := map[string]string{}
	info, err := cpuinfo.Read(r.procRoot, r.sysRoot)
	r.logOnce(ctx, "cpu", err, "describing the CPU for the NodeResourceTopology; publishing it without "+slov1alpha1.AnnotationCPUBasicInfo)
	if err == nil {
		b, err := json.Marshal(info)
		if err != nil {
			panic(fmt.Sprintf("encoding a CPUBasicInfo: %v", err)) // strings and booleans always encode
		}
		out[slov1alpha1.AnnotationCPUBasicInfo] = string(b)
	}
	if r.opts.PodResourcesSocket != "" {
		managers, err := kubeletpolicy.Read(ctx, r.opts.PodResourcesSocket)
		r.logOnce(ctx, "kubelet", err, "reading the kubelet's CPU and memory manager policies; publishing the NodeResourceTopology without them (gleaner-manager then amplifies the allocatable as if neither were static)")
		maps.Copy(out, managers.Annotations())
	}
	return out
}

// logOnce logs err under source unless it is the error last logged there.
func (r *Reporter) logOnce(ctx context.Context, source string, err error, msg string) {
	if r.loggedErr == nil {
		r.loggedErr = map[string]string{}
	}
	text := ""
	if err != nil {
		text = err.Error()
		if text != r.loggedErr[source] {
			klog.FromContext(ctx).Error(err, msg)
		}
	}
	r.loggedErr[source] = text
}

// rawAllocatable is the node's cpu and memory allocatable before gleaner-manager's amplification
// (slov1alpha1.RawAllocatable): the zones split the node's real CPUs and bytes.
func rawAllocatable(node *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := slov1alpha1.RawAllocatable(node, name); ok {
			out[name] = q
		}
	}
	return out
}

// write creates the object or updates its Node zones, retrying on a conflict with the manager's zone writes.
// annotations are set on the object; any other annotation stays as it is.
func (r *Reporter) write(ctx context.Context, node *corev1.Node, zones []nrt.Zone, annotations map[string]string) (string, error) {
	result := ReportWritten
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := nrt.New()
		err := r.client.Get(ctx, client.ObjectKey{Name: r.nodeName}, cur)
		switch {
		case apierrors.IsNotFound(err):
			result = ReportWritten
			return r.client.Create(ctx, newObject(node, zones, annotations))
		case err != nil:
			return err
		}
		next, changed, err := merge(cur, zones)
		if err != nil {
			return err
		}
		for key, value := range annotations {
			if cur.GetAnnotations()[key] == value {
				continue
			}
			if !changed {
				next = cur.DeepCopy()
			}
			setAnnotation(next, key, value)
			changed = true
		}
		if !changed {
			result = ReportUnchanged
			return nil
		}
		result = ReportWritten
		return r.client.Update(ctx, next)
	})
	switch {
	case meta.IsNoMatchError(err):
		return ReportNoCRD, fmt.Errorf("%w: %w", ErrNoCRD, err)
	case err != nil:
		return ReportError, fmt.Errorf("writing NodeResourceTopology %q: %w", r.nodeName, err)
	}
	return result, nil
}

// requests sums the cpu and memory requests of the node's pods that have not ended.
func (r *Reporter) requests() corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, m := range r.states.GetAllPods() {
		req := resourcehelper.PodRequests(m.Pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := req[name]; ok {
				v := sum[name]
				v.Add(q)
				sum[name] = v
			}
		}
	}
	return sum
}

// nodeResources are the parts of the Node the zones depend on.
func nodeResources(n *corev1.Node) corev1.ResourceList {
	l := corev1.ResourceList{}
	if n == nil {
		return l
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		l["capacity/"+name] = n.Status.Capacity[name]
		l["allocatable/"+name] = n.Status.Allocatable[name]
	}
	return l
}

// newObject is the NodeResourceTopology of node with zones, owned by the Node so that deleting it deletes the object.
// It carries annotations.
func newObject(node *corev1.Node, zones []nrt.Zone, annotations map[string]string) *unstructured.Unstructured {
	u := nrt.New()
	u.SetName(node.Name)
	for key, value := range annotations {
		setAnnotation(u, key, value)
	}
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}})
	raw := make([]any, 0, len(zones))
	for _, z := range zones {
		raw = append(raw, mergeZone(map[string]any{}, z))
	}
	u.Object["zones"] = raw
	return u
}

func setAnnotation(u *unstructured.Unstructured, key, value string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	u.SetAnnotations(a)
}

// merge puts zones into a copy of cur: the Node zones become zones, in their order, each keeping its other fields and
// resources; zones of other types follow as they were. changed says whether that differs from cur.
func merge(cur *unstructured.Unstructured, zones []nrt.Zone) (*unstructured.Unstructured, bool, error) {
	before, _, err := unstructured.NestedSlice(cur.Object, "zones")
	if err != nil {
		return nil, false, fmt.Errorf("reading the zones of NodeResourceTopology %s: %w", cur.GetName(), err)
	}
	work, _, _ := unstructured.NestedSlice(cur.Object, "zones") // a second deep copy, to change
	nodeZones := map[string]map[string]any{}
	var others []any
	for _, z := range work {
		m, ok := z.(map[string]any)
		if !ok {
			continue // not a zone: dropped, the schema has no place for it
		}
		if m["type"] == nrt.ZoneTypeNode {
			name, _ := m["name"].(string)
			nodeZones[name] = m
		} else {
			others = append(others, m)
		}
	}
	out := make([]any, 0, len(zones)+len(others))
	for _, z := range zones {
		m := nodeZones[z.Name]
		if m == nil {
			m = map[string]any{}
		}
		out = append(out, mergeZone(m, z))
	}
	out = append(out, others...)
	if equality.Semantic.DeepEqual(before, out) {
		return cur, false, nil
	}
	next := cur.DeepCopy()
	next.Object["zones"] = out
	return next, true, nil
}

// mergeZone sets name, type and the resources of z in m, replacing entries of the same name in place and keeping the
// others; it returns m.
func mergeZone(m map[string]any, z nrt.Zone) map[string]any {
	m["name"], m["type"] = z.Name, z.Type
	ours := map[string]nrt.ResourceInfo{}
	for _, r := range z.Resources {
		ours[r.Name] = r
	}
	existing, _ := m["resources"].([]any)
	resources := make([]any, 0, len(existing)+len(z.Resources))
	placed := map[string]bool{}
	for _, e := range existing {
		name, _ := asMap(e)["name"].(string)
		if r, ok := ours[name]; ok {
			if !placed[name] {
				resources = append(resources, nrt.ResourceMap(r))
			}
			placed[name] = true
			continue
		}
		resources = append(resources, e)
	}
	for _, r := range z.Resources {
		if !placed[r.Name] {
			resources = append(resources, nrt.ResourceMap(r))
		}
	}
	m["resources"] = resources
	return m
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
