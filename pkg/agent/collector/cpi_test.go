package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/perf"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// fakeCounters stands in for the PMU: every read of a cgroup's group adds that cgroup's cycles and instructions
// per round to its counts.
type fakeCounters struct {
	perRound map[string]perf.Counts // by container directory base name (the container ID)
	readErr  map[string]error
	openErr  map[string]error
	open     map[string]*fakeGroup
	opened   int
}

type fakeGroup struct {
	f      *fakeCounters
	id     string
	counts perf.Counts
	closed bool
}

func (g *fakeGroup) Read() (perf.Counts, error) {
	if err := g.f.readErr[g.id]; err != nil {
		return perf.Counts{}, err
	}
	r := g.f.perRound[g.id]
	g.counts.Leader += r.Leader
	g.counts.Member += r.Member
	return g.counts, nil
}

func (g *fakeGroup) Close() { g.closed = true; delete(g.f.open, g.id) }

func (f *fakeCounters) openGroup(dir string) (counterGroup, error) {
	id := path.Base(dir)
	if err := f.openErr[id]; err != nil {
		return nil, err
	}
	f.opened++
	g := &fakeGroup{f: f, id: id}
	f.open[id] = g
	return g, nil
}

// cpiPod is a running pod of a QoS class with one container per name; container IDs are "<pod>-<name>".
func cpiPod(name string, qos slov1alpha1.QoSClass, containers ...string) *corev1.Pod {
	b := tu.Pod(name).UID("uid-"+name).Label(slov1alpha1.LabelQoSClass, string(qos))
	for _, c := range containers {
		b = b.Container(c)
	}
	p := b.Obj()
	p.Status.ContainerStatuses = nil
	for _, c := range containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, ContainerID: "containerd://" + name + "-" + c,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
	return p
}

func TestCPI(t *testing.T) {
	type want struct {
		cpi     map[string]float64 // "pod/container" -> CPI; absent: no gauge
		qos     map[string]float64
		sampled float64
		capped  float64
		errText string
	}
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		cap      int
		perRound map[string]perf.Counts
		readErr  map[string]error
		openErr  map[string]error
		want     want
	}{
		{
			name: "CPI per container and per QoS class",
			pods: []*corev1.Pod{cpiPod("svc", slov1alpha1.QoSLS, "app", "sidecar"), cpiPod("batch", slov1alpha1.QoSBE, "job")},
			cap:  10,
			perRound: map[string]perf.Counts{
				"svc-app": {Leader: 3000, Member: 2000}, "svc-sidecar": {Leader: 1000, Member: 1000},
				"batch-job": {Leader: 8000, Member: 2000},
			},
			want: want{
				cpi:     map[string]float64{"svc/app": 1.5, "svc/sidecar": 1, "batch/job": 4},
				qos:     map[string]float64{"LS": 4000.0 / 3000, "BE": 4},
				sampled: 3,
			},
		},
		{
			name: "over the cap: the first containers by namespace, pod and name",
			pods: []*corev1.Pod{cpiPod("a", slov1alpha1.QoSLS, "c2", "c1"), cpiPod("b", slov1alpha1.QoSLS, "c1")},
			cap:  2,
			perRound: map[string]perf.Counts{
				"a-c1": {Leader: 2, Member: 1}, "a-c2": {Leader: 3, Member: 1}, "b-c1": {Leader: 5, Member: 1},
			},
			want: want{cpi: map[string]float64{"a/c1": 2, "a/c2": 3}, qos: map[string]float64{"LS": 2.5}, sampled: 2, capped: 1},
		},
		{
			name:     "a container that ran no instruction has no CPI",
			pods:     []*corev1.Pod{cpiPod("idle", slov1alpha1.QoSLS, "c")},
			cap:      10,
			perRound: map[string]perf.Counts{"idle-c": {}},
			want:     want{cpi: map[string]float64{}, qos: map[string]float64{}, sampled: 1},
		},
		{
			name:     "a read that fails costs that container only",
			pods:     []*corev1.Pod{cpiPod("ok", slov1alpha1.QoSLS, "c"), cpiPod("lost", slov1alpha1.QoSLS, "c")},
			cap:      10,
			perRound: map[string]perf.Counts{"ok-c": {Leader: 2, Member: 2}, "lost-c": {Leader: 1, Member: 1}},
			readErr:  map[string]error{"lost-c": errors.New("no such device")},
			want: want{cpi: map[string]float64{"ok/c": 1}, qos: map[string]float64{"LS": 1}, sampled: 2,
				errText: "1 of 2 failed, the first: default/lost/c: no such device"},
		},
		{
			name:     "a container whose cgroup is already gone is no failure",
			pods:     []*corev1.Pod{cpiPod("ok", slov1alpha1.QoSLS, "c"), cpiPod("gone", slov1alpha1.QoSLS, "c")},
			cap:      10,
			perRound: map[string]perf.Counts{"ok-c": {Leader: 2, Member: 2}},
			openErr:  map[string]error{"gone-c": fmt.Errorf("opening cgroup: %w", fs.ErrNotExist)},
			want:     want{cpi: map[string]float64{"ok/c": 1}, qos: map[string]float64{"LS": 1}, sampled: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := statesinformer.NewStore()
			for _, p := range tt.pods {
				store.SetPod(p)
			}
			m := metrics.New()
			fc := &fakeCounters{perRound: tt.perRound, readErr: tt.readErr, openErr: tt.openErr, open: map[string]*fakeGroup{}}
			c := newCPI(Deps{Layout: cgroup.Layout{Driver: cgroup.Cgroupfs}, Metrics: m, Devices: DeviceOptions{CPIMaxContainers: tt.cap}})
			c.probe = func() error { return nil }
			c.open = fc.openGroup
			var err error
			for i := range 3 {
				round := newRound(store, nil)
				round.reset(time.Unix(int64(i), 0))
				err = c.Collect(context.Background(), round)
			}
			if tt.want.errText == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.want.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.want.errText)) {
				t.Fatalf("error = %v, want %q", err, tt.want.errText)
			}
			d := m.Devices
			if n := testutil.CollectAndCount(d.ContainerCPI); n != len(tt.want.cpi) {
				t.Errorf("%d container CPI series, want %d", n, len(tt.want.cpi))
			}
			for k, v := range tt.want.cpi {
				pod, ctr, _ := strings.Cut(k, "/")
				if got := testutil.ToFloat64(d.ContainerCPI.WithLabelValues("default", pod, ctr)); math.Abs(got-v) > 1e-9 {
					t.Errorf("CPI of %s = %v, want %v", k, got, v)
				}
			}
			if n := testutil.CollectAndCount(d.QoSCPI); n != len(tt.want.qos) {
				t.Errorf("%d QoS CPI series, want %d", n, len(tt.want.qos))
			}
			for q, v := range tt.want.qos {
				if got := testutil.ToFloat64(d.QoSCPI.WithLabelValues(q)); math.Abs(got-v) > 1e-9 {
					t.Errorf("CPI of QoS %s = %v, want %v", q, got, v)
				}
			}
			if got := testutil.ToFloat64(d.CPIContainers.WithLabelValues("sampled")); got != tt.want.sampled {
				t.Errorf("sampled = %v, want %v", got, tt.want.sampled)
			}
			if got := testutil.ToFloat64(d.CPIContainers.WithLabelValues("capped")); got != tt.want.capped {
				t.Errorf("capped = %v, want %v", got, tt.want.capped)
			}
			// Groups are opened once per container, not per round.
			if want := int(tt.want.sampled) - len(tt.openErr); fc.opened != want {
				t.Errorf("opened %d groups over 3 rounds, want %d", fc.opened, want)
			}
		})
	}
}

// A container that stops has its counters closed and its gauge deleted.
func TestCPIContainerEnds(t *testing.T) {
	store := statesinformer.NewStore()
	a, b := cpiPod("a", slov1alpha1.QoSLS, "c"), cpiPod("b", slov1alpha1.QoSBE, "c")
	store.SetPod(a)
	store.SetPod(b)
	m := metrics.New()
	fc := &fakeCounters{perRound: map[string]perf.Counts{"a-c": {Leader: 1, Member: 1}, "b-c": {Leader: 2, Member: 1}}, open: map[string]*fakeGroup{}}
	c := newCPI(Deps{Layout: cgroup.Layout{Driver: cgroup.Cgroupfs}, Metrics: m, Devices: DeviceOptions{CPIMaxContainers: 10}})
	c.probe, c.open = func() error { return nil }, fc.openGroup
	collect := func(i int) {
		round := newRound(store, nil)
		round.reset(time.Unix(int64(i), 0))
		if err := c.Collect(context.Background(), round); err != nil {
			t.Fatal(err)
		}
	}
	collect(0)
	collect(1)
	store.DeletePod(b.UID)
	collect(2)
	if len(fc.open) != 1 || fc.open["a-c"] == nil {
		t.Errorf("open groups after b ended: %v, want only a's", fc.open)
	}
	if n := testutil.CollectAndCount(m.Devices.ContainerCPI); n != 1 {
		t.Errorf("%d CPI series after b ended, want 1", n)
	}
	if n := testutil.CollectAndCount(m.Devices.QoSCPI); n != 1 {
		t.Errorf("%d QoS CPI series after the only BE container ended, want 1 (LS)", n)
	}
}

// Where the host has no counters (this VM) the collector is unsupported, said once, and opens nothing: the real
// Probe on this machine decides, so on a host with counters the collector must run instead.
func TestCPIDegradesOnThisHost(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, CPIName)
	r.addPod(t, cpiPod("svc", slov1alpha1.QoSLS, "app"), hostsim.Usage{CPU: 0.1})
	err := r.cycles(t, 2)
	probe := perf.Probe(perf.CyclesInstructions, "/proc")
	runs := func(result string) float64 {
		return testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(CPIName, result))
	}
	switch {
	case errors.Is(probe, perf.ErrNoCounters) || errors.Is(probe, perf.ErrForbidden):
		t.Logf("this host: %v", probe)
		if runs(metrics.ResultUnsupported) != 2 || err == nil || !strings.Contains(err.Error(), probe.Error()) {
			t.Errorf("runs unsupported %v, error %v; want 2 and the probe's reason %q", runs(metrics.ResultUnsupported), err, probe)
		}
	case probe == nil:
		// Counters exist: the simulated host has no perf_event hierarchy, which is what the collector must say.
		if runs(metrics.ResultUnsupported) != 2 || err == nil || !strings.Contains(err.Error(), "perf_event hierarchy") {
			t.Errorf("runs unsupported %v, error %v; want the missing perf_event hierarchy", runs(metrics.ResultUnsupported), err)
		}
	default:
		t.Fatalf("Probe: %v", probe)
	}
}
