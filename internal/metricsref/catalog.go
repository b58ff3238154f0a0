// Package metricsref is the reference of the metrics Gleaner's binaries export: Catalog builds every metric family
// gleaner-manager and gleaner-agent register, through the constructors the binaries call, and reads its name, type,
// labels and help from the collectors themselves (a vector without series yet counts too); Problems holds a family
// to Prometheus's naming rules; Markdown renders docs/metrics.md (`go run ./hack/metrics-doc`). Its tests fail on a
// name that breaks the rules, and test/docs on a docs/metrics.md that is not what Markdown writes.
package metricsref

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/pkg/agent/slostatus"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeallocation"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/controllers/webhookcert"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/pkg/version"
	"github.com/gleaner-sh/gleaner/pkg/webhook/colocationprofile"
)

// The binaries, as Family.Binaries names them.
const (
	ManagerBinary = "gleaner-manager"
	AgentBinary   = "gleaner-agent"
)

// epoch is the fake clocks' time: nothing here reads it, but the constructors want a clock.
var epoch = time.Unix(0, 0)

// Family is one metric family a binary exports.
type Family struct {
	// Name is the metric's name.
	Name string
	// Type is counter, gauge, histogram or summary.
	Type string
	// Labels are its variable labels in the order the code gives their values, then its constant labels, sorted.
	Labels []string
	// Help is its help text.
	Help string
	// Binaries are the binaries that export it: ManagerBinary, AgentBinary or both.
	Binaries []string
}

// Catalog returns every metric family gleaner-manager and gleaner-agent register themselves, sorted by name: the
// manager's with every controller and webhook on (the noderesource term metrics too), the agent's with every QoS
// plugin on. A family both export is one Family with both binaries. Left out are the families of the libraries the
// binaries link: controller-runtime's and client-go's in the manager's registry (controller_runtime_*,
// workqueue_*, rest_client_*, leader_election_*), which are not built here, and the Go runtime and process
// collectors of the agent's (Library says which those are).
func Catalog() ([]Family, error) {
	m, err := Manager()
	if err != nil {
		return nil, fmt.Errorf("gleaner-manager: %w", err)
	}
	a, err := Agent()
	if err != nil {
		return nil, fmt.Errorf("gleaner-agent: %w", err)
	}
	return merge(append(m, a...))
}

// Library reports whether name is a family of a library collector the agent registers (Go runtime, process), not
// one of Gleaner's own.
func Library(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// Manager returns the families gleaner-manager registers (manager.New): gleaner_build_info, the SLO config
// loader's, each controller's and each webhook's.
func Manager() ([]Family, error) {
	rec := newRecorder()
	opts := manager.NewOptions()
	opts.NodeResource.TermMetrics = true
	store := sloconfig.NewStore()
	clk := clocktesting.NewFakeClock(epoch)
	var errs []error
	errs = append(errs, rec.Register(version.NewCollector(version.Get())))
	errs = append(errs, sloconfigmap.New(store, types.NamespacedName{}, rec).RegisterMetrics())
	errs = append(errs, nodeallocation.New(nodeallocation.Config{Registerer: rec}).RegisterMetrics())
	errs = append(errs, noderesource.New(store, clk, rec, opts.NodeResource).RegisterMetrics())
	_, err := colocationprofile.New(nil, nil, nil, rec)
	errs = append(errs, err)
	_, err = webhookcert.New(nil, clk, rec, webhookcert.Options{})
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rec.families(ManagerBinary)
}

// Agent returns the families gleaner-agent registers (agent.New): its Metrics, the executor's, the evictor's,
// every QoS plugin's, the runtime hook's and the NodeSLO status writer's, with the library collectors left out.
func Agent() ([]Family, error) {
	root, err := os.MkdirTemp("", "metricsref-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	rec := newRecorder()
	clk := clocktesting.NewFakeClock(epoch)
	m := metrics.NewIn(rec)
	m.RegisterCacheSize(func() (int, int64) { return 0, 0 })
	cgroups := cgroup.NewFS(root, cgroup.V2)
	exec, err := executor.New(cgroups, clk, rec, executor.DefaultOptions())
	if err != nil {
		return nil, err
	}
	evictOpts := evictor.DefaultOptions()
	evictOpts.NodeName = "node"
	ev, err := evictor.New(nil, exec, nil, clk, rec, evictOpts)
	if err != nil {
		return nil, err
	}
	procFS, err := proc.New(root)
	if err != nil {
		return nil, err
	}
	cache, err := metriccache.New(metriccache.DefaultConfig(), clk)
	if err != nil {
		return nil, err
	}
	store := statesinformer.NewStore()
	var all []string
	for _, f := range plugins.Registry() {
		all = append(all, f.Name)
	}
	qos, err := qosmanager.NewManager(qosmanager.Deps{
		States: store, Cache: cache, Executor: exec, Cgroups: cgroups, Proc: procFS, Host: system.NewHostFS(root),
		StateDir: root, SysRoot: root, Clock: clk, Evictor: ev, Events: noEvents{}, Pressure: noPressure{}, Registerer: rec,
	}, clk, plugins.Registry(), all, nil)
	if err != nil {
		return nil, err
	}
	status, err := runtimehook.NewStatus(string(runtimehook.ModeNRI), "", rec, clk)
	if err != nil {
		return nil, err
	}
	if _, err := slostatus.New(nil, store, qos, status, clk, rec, "node"); err != nil {
		return nil, err
	}
	fs, err := rec.families(AgentBinary)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(fs, func(f Family) bool { return Library(f.Name) }), nil
}

// merge makes one Family of a name several binaries export, and sorts by name. The same name with another type,
// labels or help is an error: one name, one meaning.
func merge(fs []Family) ([]Family, error) {
	index := map[string]int{}
	var out []Family
	for _, f := range fs {
		i, ok := index[f.Name]
		if !ok {
			index[f.Name] = len(out)
			out = append(out, f)
			continue
		}
		prev := &out[i]
		if prev.Type != f.Type || prev.Help != f.Help || !slices.Equal(prev.Labels, f.Labels) {
			return nil, fmt.Errorf("%s is exported by %v and %v with another type, labels or help", f.Name, prev.Binaries, f.Binaries)
		}
		for _, b := range f.Binaries {
			if !slices.Contains(prev.Binaries, b) {
				prev.Binaries = append(prev.Binaries, b)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// typed is a collector that says the type of each metric it describes. A collector of constant metrics made at
// scrape time needs it: without series yet, nothing else shows its type.
type typed interface {
	MetricType(d *prometheus.Desc) prometheus.ValueType
}

// recorder is a Registerer that keeps every collector registered in it, and registers it in a registry of its own
// too, so that what the binaries' registries refuse (a duplicate name, an invalid descriptor) fails here as well.
type recorder struct {
	reg        *prometheus.Registry
	collectors []prometheus.Collector
}

var _ prometheus.Registerer = &recorder{}

func newRecorder() *recorder { return &recorder{reg: prometheus.NewPedanticRegistry()} }

// Register implements prometheus.Registerer.
func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *recorder) Unregister(c prometheus.Collector) bool {
	r.collectors = slices.DeleteFunc(r.collectors, func(x prometheus.Collector) bool { return x == c })
	return r.reg.Unregister(c)
}

// families describes every family of the recorded collectors.
func (r *recorder) families(binary string) ([]Family, error) {
	var out []Family
	for _, c := range r.collectors {
		fs, err := describe(c)
		if err != nil {
			return nil, err
		}
		for i := range fs {
			fs[i].Binaries = []string{binary}
		}
		out = append(out, fs...)
	}
	return merge(out)
}

// describe returns the families of c: their descriptors from Describe, each one's type from what c is (a vector, a
// metric), from what it says (typed) or from the series it has now.
func describe(c prometheus.Collector) ([]Family, error) {
	var descs []*prometheus.Desc
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		descs = append(descs, d)
	}
	kinds, err := typesOf(c, descs)
	if err != nil {
		return nil, err
	}
	var fs []Family
	for _, d := range descs {
		f, err := familyOf(d)
		if err != nil {
			return nil, err
		}
		kind, ok := kinds[d]
		if !ok {
			return nil, fmt.Errorf("%s: its collector (%T) has no series and does not say its type (a MetricType method)", f.Name, c)
		}
		f.Type = strings.ToLower(kind.String())
		fs = append(fs, f)
	}
	return fs, nil
}

// typesOf finds the type of each of descs, the descriptors of c.
func typesOf(c prometheus.Collector, descs []*prometheus.Desc) (map[*prometheus.Desc]dto.MetricType, error) {
	all := func(t dto.MetricType) map[*prometheus.Desc]dto.MetricType {
		m := map[*prometheus.Desc]dto.MetricType{}
		for _, d := range descs {
			m[d] = t
		}
		return m
	}
	switch v := c.(type) {
	case *prometheus.CounterVec:
		return all(dto.MetricType_COUNTER), nil
	case *prometheus.GaugeVec:
		return all(dto.MetricType_GAUGE), nil
	case *prometheus.HistogramVec:
		return all(dto.MetricType_HISTOGRAM), nil
	case *prometheus.SummaryVec:
		return all(dto.MetricType_SUMMARY), nil
	case typed:
		m := map[*prometheus.Desc]dto.MetricType{}
		for _, d := range descs {
			switch v.MetricType(d) {
			case prometheus.CounterValue:
				m[d] = dto.MetricType_COUNTER
			case prometheus.GaugeValue:
				m[d] = dto.MetricType_GAUGE
			default:
				m[d] = dto.MetricType_UNTYPED
			}
		}
		return m, nil
	}
	m := map[*prometheus.Desc]dto.MetricType{}
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	var errs []error
	for metric := range ch {
		t, err := typeOf(metric)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m[metric.Desc()] = t
	}
	return m, errors.Join(errs...)
}

// typeOf is the type of one series.
func typeOf(m prometheus.Metric) (dto.MetricType, error) {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		return 0, fmt.Errorf("reading a series of %s: %w", m.Desc(), err)
	}
	switch {
	case pb.Counter != nil:
		return dto.MetricType_COUNTER, nil
	case pb.Gauge != nil:
		return dto.MetricType_GAUGE, nil
	case pb.Histogram != nil:
		return dto.MetricType_HISTOGRAM, nil
	case pb.Summary != nil:
		return dto.MetricType_SUMMARY, nil
	}
	return dto.MetricType_UNTYPED, nil
}

// placeholder is the value familyOf gives a variable label: it cannot be a constant label's value by accident.
func placeholder(i int) string { return fmt.Sprintf("\x00variable %d", i) }

// familyOf reads the name, help and labels of d: a registry gathers one series made from it, whose variable labels
// have placeholder values, so that only the descriptor's public contract is read.
func familyOf(d *prometheus.Desc) (Family, error) {
	var metric prometheus.Metric
	var err error
	for n := 0; n <= 32; n++ {
		values := make([]string, n)
		for i := range values {
			values[i] = placeholder(i)
		}
		if metric, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, values...); err == nil {
			break
		}
	}
	if metric == nil {
		return Family{}, fmt.Errorf("describing %s: %w", d, err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(single{metric}); err != nil {
		return Family{}, fmt.Errorf("describing %s: %w", d, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		return Family{}, fmt.Errorf("describing %s: %w", d, err)
	}
	if len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		return Family{}, fmt.Errorf("describing %s: gathered %d families", d, len(mfs))
	}
	mf := mfs[0]
	f := Family{Name: mf.GetName(), Help: mf.GetHelp()}
	variable := map[int]string{}
	var constant []string
	for _, lp := range mf.GetMetric()[0].GetLabel() {
		var i int
		if _, err := fmt.Sscanf(lp.GetValue(), "\x00variable %d", &i); err == nil && lp.GetValue() == placeholder(i) {
			variable[i] = lp.GetName()
			continue
		}
		constant = append(constant, lp.GetName())
	}
	for i := range len(variable) {
		f.Labels = append(f.Labels, variable[i])
	}
	sort.Strings(constant)
	f.Labels = append(f.Labels, constant...)
	return f, nil
}

// single is a collector of one series.
type single struct{ m prometheus.Metric }

func (s single) Describe(ch chan<- *prometheus.Desc) { ch <- s.m.Desc() }
func (s single) Collect(ch chan<- prometheus.Metric) { ch <- s.m }

// noEvents and noPressure stand in for the agent's event writer and NodeMetric reporter, which the QoS plugins only
// call while they run.
type (
	noEvents   struct{}
	noPressure struct{}
)

func (noEvents) Eventf(runtime.Object, string, string, string, ...any) {}

func (noPressure) SetMemoryPressure(*slov1alpha1.MemoryPressure) {}

func (noPressure) WriteMemoryPressure(context.Context, *slov1alpha1.MemoryPressure) error { return nil }
