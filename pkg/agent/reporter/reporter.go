package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodemetrics/status,verbs=get;patch

// Options tune the reporter.
type Options struct {
	// MinCoverage is how far back, as a share of its window, a series' samples must reach to be reported: after a
	// restart nothing is reported until the samples cover this much of the aggregate duration, and a pod that
	// started less than that long ago is left out (the batch plugin then counts it at its request).
	MinCoverage float64
	// MaxPods caps the pods listed in the status, so its size stays bounded whatever runs on the node; pods beyond
	// it (by namespace and name) are left out and logged.
	MaxPods int
	// MaxHostApplications caps the host applications listed, likewise.
	MaxHostApplications int
}

// DefaultOptions are the defaults of the agent's flags.
func DefaultOptions() Options {
	return Options{MinCoverage: 0.5, MaxPods: 1000, MaxHostApplications: 100}
}

// Validate reports every invalid field.
func (o Options) Validate() error {
	var errs []error
	if o.MinCoverage <= 0 || o.MinCoverage > 1 {
		errs = append(errs, fmt.Errorf("--report-min-coverage must be in (0, 1], got %v", o.MinCoverage))
	}
	if o.MaxPods < 1 || o.MaxHostApplications < 1 {
		errs = append(errs, fmt.Errorf("--report-max-pods and --report-max-host-applications must be at least 1, got %d and %d", o.MaxPods, o.MaxHostApplications))
	}
	return errors.Join(errs...)
}

// Predictor is the peak prediction whose result the NodeMetric reports as prodReclaimableMetric.
type Predictor interface {
	// ProdReclaimable is what the prod pods requested but are predicted not to use, at now, with the terms it was
	// derived from; nil reports nothing.
	ProdReclaimable(now time.Time) *slov1alpha1.ReclaimableMetric
}

// Reporter writes the NodeMetric status of one node. It is a Runnable.
type Reporter struct {
	client    client.Client
	states    statesinformer.States
	cache     metriccache.Cache
	clock     clock.WithTicker
	metrics   *metrics.Metrics
	nodeName  string
	opts      Options
	predictor Predictor

	// writing is held by whoever writes the status, a report or a memory-pressure write, one at a time: a report
	// carries the memory pressure as it was when it was built, and must not land after a newer one was written. A
	// channel rather than a mutex, so that a memory-pressure write (which holds evictions up) can give up waiting
	// on a report stuck on an API server that does not answer.
	writing chan struct{}
	// mu guards pressure; it is never held across a request.
	mu sync.Mutex
	// pressure is status.memoryPressure in every report (SetMemoryPressure); nil for none.
	pressure *slov1alpha1.MemoryPressure
}

// WithPredictor has the reporter include p's prediction in every status; it returns r.
func (r *Reporter) WithPredictor(p Predictor) *Reporter {
	r.predictor = p
	return r
}

// New returns a reporter for nodeName. c writes the status (and reads the NodeMetric again after a conflict).
func New(c client.Client, states statesinformer.States, cache metriccache.Cache, clk clock.WithTicker, m *metrics.Metrics, nodeName string, opts Options) *Reporter {
	return &Reporter{client: c, states: states, cache: cache, clock: clk, metrics: m, nodeName: nodeName, opts: opts, writing: make(chan struct{}, 1)}
}

// Name is the reporter's name as a Runnable.
func (r *Reporter) Name() string { return "nodemetric-reporter" }

// Start reports every report interval of the NodeMetric's spec (re-read when the spec changes) until ctx ends. It
// always returns nil: failed reports are logged and counted, and the next one tries again.
func (r *Reporter) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("node", r.nodeName)
	ctx = klog.NewContext(ctx, log)
	changed := make(chan struct{}, 1)
	r.states.RegisterCallback(statesinformer.KindNodeMetric, "nodemetric-reporter", func(statesinformer.Kind) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	var adjusted string // what was last logged about an out-of-range spec
	for {
		p := PolicyOf(r.states.GetNodeMetric())
		if a := strings.Join(p.Adjusted, "; "); a != adjusted {
			if a != "" {
				log.Info("NodeMetric spec out of range; using bounded values", "adjusted", a)
			}
			adjusted = a
		}
		t := r.clock.NewTimer(p.ReportInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-changed:
			t.Stop()
		case <-t.C():
			if result, err := r.Report(ctx); err != nil {
				log.Error(err, "reporting node metrics")
			} else if result != metrics.ReportWritten {
				log.V(2).Info("node metrics not written", "result", result)
			}
		}
	}
}

// Report writes the status once and says what happened: metrics.ReportWritten, ReportUnchanged (the status would
// not change, nothing sent), ReportNotReady (too little data for the node's usage), ReportNoObject (no NodeMetric
// yet; gleaner-manager creates it) or ReportError with the error.
func (r *Reporter) Report(ctx context.Context) (string, error) {
	result, err := r.report(ctx)
	r.metrics.Reports.WithLabelValues(result).Inc()
	return result, err
}

func (r *Reporter) report(ctx context.Context) (string, error) {
	if err := r.lockWriting(ctx); err != nil {
		return metrics.ReportError, err
	}
	defer r.unlockWriting()
	nm := r.states.GetNodeMetric()
	if nm == nil {
		return metrics.ReportNoObject, nil
	}
	status := r.Build(r.clock.Now(), PolicyOf(nm))
	if status == nil {
		return metrics.ReportNotReady, nil
	}
	status.ObservedGeneration = nm.Generation
	result := metrics.ReportWritten
	fresh := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		base := nm
		if fresh {
			base = &slov1alpha1.NodeMetric{}
			if err := r.client.Get(ctx, client.ObjectKey{Name: r.nodeName}, base); err != nil {
				return err
			}
		}
		fresh = true
		if equality.Semantic.DeepEqual(base.Status, *status) {
			result = metrics.ReportUnchanged
			return nil
		}
		next := base.DeepCopy()
		next.Status = *status
		return r.client.Status().Patch(ctx, next, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	switch {
	case apierrors.IsNotFound(err):
		return metrics.ReportNoObject, nil
	case err != nil:
		return metrics.ReportError, fmt.Errorf("writing the status of NodeMetric %q: %w", r.nodeName, err)
	}
	return result, nil
}

// Build computes the status at now from the cache; nil when the node's own usage is not covered enough yet.
// UpdateTime is now to the second, the precision the API keeps, so a status built twice in one second is equal.
func (r *Reporter) Build(now time.Time, p Policy) *slov1alpha1.NodeMetricStatus {
	start := now.Add(-p.AggregateDuration)
	nodeUsage := r.usage(metriccache.NodeKey(metriccache.NodeCPUUsage), metriccache.NodeKey(metriccache.NodeMemoryUsage), start, now, metriccache.Avg)
	if nodeUsage == nil {
		return nil
	}
	info := &slov1alpha1.NodeMetricInfo{
		NodeUsage:   nodeUsage,
		SystemUsage: r.usage(metriccache.NodeKey(metriccache.SystemCPUUsage), metriccache.NodeKey(metriccache.SystemMemoryUsage), start, now, metriccache.Avg),
	}
	for _, d := range p.Durations {
		if a := r.aggregated(metriccache.NodeCPUUsage, metriccache.NodeMemoryUsage, d, now); a != nil {
			info.AggregatedNodeUsages = append(info.AggregatedNodeUsages, *a)
		}
		if a := r.aggregated(metriccache.SystemCPUUsage, metriccache.SystemMemoryUsage, d, now); a != nil {
			info.AggregatedSystemUsages = append(info.AggregatedSystemUsages, *a)
		}
	}
	status := &slov1alpha1.NodeMetricStatus{
		UpdateTime:            &metav1.Time{Time: now.Truncate(time.Second)},
		NodeMetric:            info,
		PodUsages:             r.pods(start, now),
		HostApplicationMetric: r.hostApps(start, now),
		GPUs:                  r.gpus(start, now),
	}
	if r.predictor != nil {
		status.ProdReclaimableMetric = r.predictor.ProdReclaimable(now)
	}
	status.MemoryPressure = r.memoryPressure()
	return status
}

// SetMemoryPressure makes mp status.memoryPressure of every report from now on (nil: none), without writing it
// now. The memory eviction plugin calls it on every run that finds the node's memory above the eviction threshold,
// so that each report says when it last did. It never waits on a write.
func (r *Reporter) SetMemoryPressure(mp *slov1alpha1.MemoryPressure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pressure = mp.DeepCopy()
}

// memoryPressure is a copy of what SetMemoryPressure set.
func (r *Reporter) memoryPressure() *slov1alpha1.MemoryPressure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pressure.DeepCopy()
}

// WriteMemoryPressure is SetMemoryPressure, and writes mp into the NodeMetric's status.memoryPressure at once,
// before it returns, leaving the rest of the status as it is: gleaner-manager stops offering batch pods memory on
// the node as soon as it sees it, and the memory eviction plugin calls it before it sends the evictions that
// status lists. Without a NodeMetric there is nothing to write (gleaner-manager creates it) and it returns nil;
// mp is still in the next report. ctx bounds the write, and the wait for a report being written.
func (r *Reporter) WriteMemoryPressure(ctx context.Context, mp *slov1alpha1.MemoryPressure) error {
	r.SetMemoryPressure(mp)
	if err := r.lockWriting(ctx); err != nil {
		return err
	}
	defer r.unlockWriting()
	// A merge patch of this one field: nothing else in the status is the memory eviction's business, and it cannot
	// conflict with what the agent wrote before.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"memoryPressure": mp}})
	if err != nil {
		return fmt.Errorf("encoding the memory pressure of NodeMetric %q: %w", r.nodeName, err)
	}
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: r.nodeName}}
	err = r.client.Status().Patch(ctx, nm, client.RawPatch(types.MergePatchType, patch))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("writing the memory pressure of NodeMetric %q: %w", r.nodeName, err)
	}
	return nil
}

// lockWriting waits until no other write of the status is under way, or ctx ends.
func (r *Reporter) lockWriting(ctx context.Context) error {
	select {
	case r.writing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another write of NodeMetric %q: %w", r.nodeName, ctx.Err())
	}
}

// unlockWriting ends the write lockWriting began.
func (r *Reporter) unlockWriting() { <-r.writing }

// pods lists the usage of the node's pods covered enough, at most MaxPods, in the compact form the manager decodes
// cheaply (status.podUsages; status.podsMetric is what agents before it wrote).
func (r *Reporter) pods(start, end time.Time) []slov1alpha1.PodUsage {
	var out []slov1alpha1.PodUsage
	pods := r.states.GetAllPods() // sorted by namespace and name: the status is stable between reports
	for _, m := range pods {
		uid := string(m.Pod.UID)
		u := r.usage(metriccache.PodKey(metriccache.PodCPUUsage, uid), metriccache.PodKey(metriccache.PodMemoryUsage, uid), start, end, metriccache.Avg)
		if u == nil {
			continue
		}
		if len(out) == r.opts.MaxPods {
			klog.Background().Info("NodeMetric status is full, pods left out", "maxPods", r.opts.MaxPods, "pods", len(pods))
			break
		}
		priority := slov1alpha1.PodMetricInfo{Priority: m.Priority, QoS: m.QoS}.EffectivePriority()
		out = append(out, slov1alpha1.NewPodUsage(uid, priority, u, r.podGPU(uid, start, end)))
	}
	return out
}

// hostApps lists the usage of the NodeSLO's host applications covered enough.
func (r *Reporter) hostApps(start, end time.Time) []slov1alpha1.HostApplicationMetricInfo {
	slo := r.states.GetNodeSLO()
	if slo == nil {
		return nil
	}
	var out []slov1alpha1.HostApplicationMetricInfo
	for _, app := range slo.Spec.HostApplications {
		u := r.usage(metriccache.NamedKey(metriccache.HostAppCPUUsage, app.Name), metriccache.NamedKey(metriccache.HostAppMemoryUsage, app.Name), start, end, metriccache.Avg)
		if u == nil {
			continue
		}
		if len(out) == r.opts.MaxHostApplications {
			break
		}
		priority := app.Priority
		if priority == "" {
			priority = slov1alpha1.PriorityNone
		}
		out = append(out, slov1alpha1.HostApplicationMetricInfo{Name: app.Name, Priority: priority, QoS: app.QoS, Usage: u})
	}
	return out
}

// aggregation maps a statistic of the API to the cache's.
type aggregation struct {
	api   slov1alpha1.AggregationType
	cache metriccache.Aggregation
}

// aggregations are the statistics of an aggregated usage.
func aggregations() []aggregation {
	return []aggregation{
		{slov1alpha1.AggregationAvg, metriccache.Avg},
		{slov1alpha1.AggregationP50, metriccache.P50},
		{slov1alpha1.AggregationP90, metriccache.P90},
		{slov1alpha1.AggregationP95, metriccache.P95},
		{slov1alpha1.AggregationP99, metriccache.P99},
	}
}

// aggregated is the statistics of CPU and memory over the window d before now; nil when not covered enough.
func (r *Reporter) aggregated(cpu, mem metriccache.Metric, d time.Duration, now time.Time) *slov1alpha1.AggregatedUsage {
	c, okC := r.query(metriccache.NodeKey(cpu), now.Add(-d), now)
	m, okM := r.query(metriccache.NodeKey(mem), now.Add(-d), now)
	if !okC || !okM {
		return nil
	}
	a := &slov1alpha1.AggregatedUsage{Duration: metav1.Duration{Duration: d}, Usage: map[slov1alpha1.AggregationType]corev1.ResourceList{}}
	for _, agg := range aggregations() {
		a.Usage[agg.api] = resources(c.Value(agg.cache), m.Value(agg.cache))
	}
	return a
}

// usage is the aggregation agg of a CPU and a memory series over (start, end]; nil unless both are covered enough.
func (r *Reporter) usage(cpu, mem metriccache.Key, start, end time.Time, agg metriccache.Aggregation) corev1.ResourceList {
	c, okC := r.query(cpu, start, end)
	m, okM := r.query(mem, start, end)
	if !okC || !okM {
		return nil
	}
	return resources(c.Value(agg), m.Value(agg))
}

// query is the series k over (start, end] when it is covered enough and current: its samples reach back at least
// MinCoverage of the window (cold start), and its last sample is no older than the rest of the window allows. A
// collector that stopped would otherwise have its old average reported under a fresh updateTime.
func (r *Reporter) query(k metriccache.Key, start, end time.Time) (*metriccache.Result, bool) {
	res, ok := r.cache.Query(k, start, end)
	if !ok || res.Coverage < r.opts.MinCoverage {
		return nil, false
	}
	maxAge := max(time.Duration(float64(end.Sub(start))*(1-r.opts.MinCoverage)), 2*res.Resolution)
	if end.Sub(res.Last) > maxAge {
		return nil, false
	}
	return &res, true
}

// resources renders cores and bytes as CPU with millicore precision and memory in whole KiB, or whole MiB from 1 GiB
// up, so that it reads as "15873Mi" in `kubectl get nodemetric` rather than as a row of raw bytes (an average is
// rarely a multiple of 1024). The rounding is at most 512 bytes, or 0.05% from 1 GiB up.
func resources(cores, bytes float64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(math.Max(cores, 0)*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(roundMemory(math.Max(bytes, 0)), resource.BinarySI),
	}
}

// roundMemory rounds bytes to the unit resources reports memory in.
func roundMemory(bytes float64) int64 {
	unit := float64(1 << 10)
	if bytes >= 1<<30 {
		unit = 1 << 20
	}
	return int64(math.Round(bytes/unit) * unit)
}
