package collector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/gpu"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/test/hostsim"
)

// fakeNVML is the GPU library of a test: devices by index, their processes and utilisation samples, and errors
// per call.
type fakeNVML struct {
	initErr, countErr error
	devices           []gpu.Device
	deviceErr         map[int]error
	procs             map[int][]gpu.Process
	procErr           map[int]error
	samples           map[int][]gpu.ProcessSample
	utilErr           map[int]error
	inits             int
	sinces            map[int][]uint64 // the since argument of every ProcessUtilization call
}

func (f *fakeNVML) Init() error { f.inits++; return f.initErr }
func (f *fakeNVML) DeviceCount() (int, error) {
	return len(f.devices), f.countErr
}
func (f *fakeNVML) Device(i int) (gpu.Device, error) {
	if err := f.deviceErr[i]; err != nil {
		return gpu.Device{}, err
	}
	return f.devices[i], nil
}
func (f *fakeNVML) Processes(i int) ([]gpu.Process, error) { return f.procs[i], f.procErr[i] }
func (f *fakeNVML) ProcessUtilization(i int, since uint64) ([]gpu.ProcessSample, error) {
	if f.sinces == nil {
		f.sinces = map[int][]uint64{}
	}
	f.sinces[i] = append(f.sinces[i], since)
	if err := f.utilErr[i]; err != nil {
		return nil, err
	}
	var out []gpu.ProcessSample
	for _, s := range f.samples[i] {
		if s.Timestamp > since {
			out = append(out, s)
		}
	}
	return out, nil
}

func h100(i int) gpu.Device {
	return gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Model: "NVIDIA H100 80GB HBM3", MemoryTotal: 80 << 30, MemoryUsed: 10 << 30, Utilization: 0.4}
}

// gpuRig is a simulated host with two running pods (a: container "train", b: container "serve") whose processes
// 100 (a/train), 101 (a's pod cgroup itself), 103 (b/serve) and 102 (the host's) the fake NVML lists.
type gpuRig struct {
	c     *gpuCollector
	m     *metrics.Metrics
	cache *metriccache.MemoryCache
	store *statesinformer.Store
	a, b  *corev1.Pod
	clock *clocktesting.FakeClock
}

func newGPURig(t *testing.T, lib gpu.Library, maxDevices int) *gpuRig {
	t.Helper()
	cfg := hostsim.Config{Version: cgroup.V1, Driver: cgroup.Systemd}
	h, err := hostsim.New(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &gpuRig{store: statesinformer.NewStore(), m: metrics.New(), clock: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))}
	r.a = cpiPod("a", slov1alpha1.QoSLS, "train")
	r.b = cpiPod("b", slov1alpha1.QoSBE, "serve")
	for _, p := range []*corev1.Pod{r.a, r.b} {
		if err := h.AddPod(p, hostsim.Usage{}); err != nil {
			t.Fatal(err)
		}
		r.store.SetPod(p)
	}
	l := h.Layout()
	ctr := func(p *corev1.Pod) string {
		d, err := l.ContainerDir(l.PodDir(p), p.Status.ContainerStatuses[0].ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// As the agent reads them from inside its container: a cgroup namespace of its own shows "/.." above.
	for pid, cg := range map[int]string{
		100: "/../../" + ctr(r.a), 101: "/" + l.PodDir(r.a), 102: "/system.slice/sshd.service", 103: "/" + ctr(r.b),
	} {
		if err := h.WriteFile(fmt.Sprintf("proc/%d/cgroup", pid), fmt.Sprintf("12:memory:%s\n4:cpu,cpuacct:%s\n", cg, cg)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := proc.New(h.ProcRoot())
	if err != nil {
		t.Fatal(err)
	}
	if r.cache, err = metriccache.New(metriccache.DefaultConfig(), r.clock); err != nil {
		t.Fatal(err)
	}
	r.c = newGPU(Deps{Proc: p, Layout: l, Cache: r.cache, Metrics: r.m, Devices: DeviceOptions{GPUMaxDevices: maxDevices}}, lib)
	return r
}

func (r *gpuRig) collect() error {
	r.clock.Step(10 * time.Second)
	round := newRound(r.store, r.cache)
	round.reset(r.clock.Now())
	return r.c.Collect(context.Background(), round)
}

func (r *gpuRig) podSample(m metriccache.Metric, p *corev1.Pod) float64 {
	res, ok := r.cache.Query(metriccache.PodKey(m, string(p.UID)), r.clock.Now().Add(-time.Second), r.clock.Now())
	if !ok {
		return math.NaN()
	}
	return res.Value(metriccache.Last)
}

func TestGPU(t *testing.T) {
	const gi = 1 << 30
	lost := fmt.Errorf("reading the memory of GPU 1: %w (ERROR_GPU_IS_LOST)", gpu.ErrLost)
	tests := []struct {
		name    string
		lib     *fakeNVML
		max     int
		wantErr string
		// GPUs reported (index -> UUID), container gauges "pod/container/gpu" -> memory and SM share, pod samples.
		gpus            map[string]string
		containerMemory map[string]float64
		containerSM     map[string]float64
		podMemory       map[string]float64 // pod name -> bytes
		podSM           map[string]float64
	}{
		{
			name: "processes attributed to containers and pods",
			lib: &fakeNVML{
				devices: []gpu.Device{h100(0), h100(1)},
				procs: map[int][]gpu.Process{
					0: {{PID: 100, Memory: 4 * gi}, {PID: 101, Memory: gi}, {PID: 102, Memory: 2 * gi}},
					1: {{PID: 100, Memory: 8 * gi}, {PID: 103, Memory: 3 * gi}},
				},
				samples: map[int][]gpu.ProcessSample{
					0: {{PID: 100, SM: 0.2, Timestamp: 10}, {PID: 100, SM: 0.3, Timestamp: 20}, {PID: 102, SM: 0.5, Timestamp: 20}},
					1: {{PID: 100, SM: 0.6, Timestamp: 15}, {PID: 103, SM: 0.25, Timestamp: 15}},
				},
			},
			max:             16,
			gpus:            map[string]string{"0": "GPU-0", "1": "GPU-1"},
			containerMemory: map[string]float64{"a/train/0": 4 * gi, "a/train/1": 8 * gi, "b/serve/1": 3 * gi},
			containerSM:     map[string]float64{"a/train/0": 0.3, "a/train/1": 0.6, "b/serve/1": 0.25},
			// Pod a: its container on both GPUs plus its own cgroup's process; the host's process 102 is nobody's.
			podMemory: map[string]float64{"a": 13 * gi, "b": 3 * gi},
			podSM:     map[string]float64{"a": 0.9, "b": 0.25},
		},
		{
			name: "a lost GPU is reported as an error, the others still are",
			lib: &fakeNVML{
				devices:   []gpu.Device{h100(0), h100(1)},
				deviceErr: map[int]error{1: lost},
				procs:     map[int][]gpu.Process{0: {{PID: 103, Memory: gi}}},
			},
			max:             16,
			wantErr:         "GPU 1: reading the memory of GPU 1: the GPU is lost",
			gpus:            map[string]string{"0": "GPU-0"},
			containerMemory: map[string]float64{"b/serve/0": gi},
			containerSM:     map[string]float64{"b/serve/0": 0},
			podMemory:       map[string]float64{"b": gi},
			podSM:           map[string]float64{"b": 0},
		},
		{
			name: "a GPU without process utilisation: memory only, no error",
			lib: &fakeNVML{
				devices: []gpu.Device{h100(0)},
				procs:   map[int][]gpu.Process{0: {{PID: 100, Memory: gi}}},
				utilErr: map[int]error{0: fmt.Errorf("reading: %w", gpu.ErrNotSupported)},
			},
			max:             16,
			gpus:            map[string]string{"0": "GPU-0"},
			containerMemory: map[string]float64{"a/train/0": gi},
			containerSM:     map[string]float64{"a/train/0": 0},
			podMemory:       map[string]float64{"a": gi},
			podSM:           map[string]float64{"a": 0},
		},
		{
			name: "a process list that fails costs that GPU's attribution only",
			lib: &fakeNVML{
				devices: []gpu.Device{h100(0), h100(1)},
				procs:   map[int][]gpu.Process{1: {{PID: 103, Memory: gi}}},
				procErr: map[int]error{0: errors.New("ERROR_UNKNOWN")},
			},
			max:             16,
			wantErr:         "GPU 0 (GPU-0): ERROR_UNKNOWN",
			gpus:            map[string]string{"0": "GPU-0", "1": "GPU-1"},
			containerMemory: map[string]float64{"b/serve/1": gi},
			containerSM:     map[string]float64{"b/serve/1": 0},
			podMemory:       map[string]float64{"b": gi},
			podSM:           map[string]float64{"b": 0},
		},
		{
			name:            "more GPUs than the cap: the first ones, and an error saying so",
			lib:             &fakeNVML{devices: []gpu.Device{h100(0), h100(1), h100(2)}},
			max:             2,
			wantErr:         "3 GPUs, reporting the first 2",
			gpus:            map[string]string{"0": "GPU-0", "1": "GPU-1"},
			containerMemory: map[string]float64{}, containerSM: map[string]float64{},
		},
		{
			name:            "no GPU at all: nothing reported, no error",
			lib:             &fakeNVML{},
			max:             16,
			gpus:            map[string]string{},
			containerMemory: map[string]float64{}, containerSM: map[string]float64{},
		},
		{
			name:    "counting fails",
			lib:     &fakeNVML{countErr: errors.New("ERROR_UNKNOWN")},
			max:     16,
			wantErr: "counting GPUs: ERROR_UNKNOWN",
			gpus:    map[string]string{}, containerMemory: map[string]float64{}, containerSM: map[string]float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newGPURig(t, tt.lib, tt.max)
			err := r.collect()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			checkGPUs(t, r, tt.gpus, tt.containerMemory, tt.containerSM, tt.podMemory, tt.podSM)
		})
	}
}

// checkGPUs compares what a round reported with the wanted GPUs (index -> UUID), container gauges ("pod/container/
// gpu" -> value) and pod samples (pod name -> value; a pod not listed must have none).
func checkGPUs(t *testing.T, r *gpuRig, gpus map[string]string, containerMemory, containerSM, podMemory, podSM map[string]float64) {
	t.Helper()
	d := r.m.Devices
	if n := testutil.CollectAndCount(d.GPUInfo); n != len(gpus) {
		t.Errorf("%d GPUs reported, want %d", n, len(gpus))
	}
	for idx, uuid := range gpus {
		if got := testutil.ToFloat64(d.GPUInfo.WithLabelValues(idx, uuid, "NVIDIA H100 80GB HBM3")); got != 1 {
			t.Errorf("GPU %s info = %v", idx, got)
		}
		if got := testutil.ToFloat64(d.GPUMemoryTotal.WithLabelValues(idx)); got != 80<<30 {
			t.Errorf("GPU %s memory total = %v", idx, got)
		}
	}
	if n := testutil.CollectAndCount(d.ContainerGPUMemory); n != len(containerMemory) {
		t.Errorf("%d container GPU memory series, want %d", n, len(containerMemory))
	}
	for k, v := range containerMemory {
		l := strings.Split(k, "/")
		if got := testutil.ToFloat64(d.ContainerGPUMemory.WithLabelValues("default", l[0], l[1], l[2])); got != v {
			t.Errorf("GPU memory of %s = %v, want %v", k, got, v)
		}
	}
	for k, v := range containerSM {
		l := strings.Split(k, "/")
		if got := testutil.ToFloat64(d.ContainerGPUUtilization.WithLabelValues("default", l[0], l[1], l[2])); math.Abs(got-v) > 1e-9 {
			t.Errorf("GPU SM share of %s = %v, want %v", k, got, v)
		}
	}
	for _, p := range []*corev1.Pod{r.a, r.b} {
		mem, sm := r.podSample(metriccache.PodGPUMemory, p), r.podSample(metriccache.PodGPUUtilization, p)
		wantMem, ok := podMemory[p.Name]
		if !ok {
			if !math.IsNaN(mem) {
				t.Errorf("pod %s has a GPU memory sample %v, want none", p.Name, mem)
			}
			continue
		}
		if mem != wantMem || math.Abs(sm-podSM[p.Name]) > 1e-6 { // the cache keeps float32
			t.Errorf("pod %s GPU memory %v, SM %v; want %v, %v", p.Name, mem, sm, wantMem, podSM[p.Name])
		}
	}
	v, _ := r.cache.Info(metriccache.InfoGPUs)
	if devs, _ := v.([]gpu.Device); len(devs) != len(gpus) {
		t.Errorf("the cache holds GPUs %v, want %d", v, len(gpus))
	}
}

// Each round asks for the utilisation samples newer than the newest one seen on that GPU.
func TestGPUSamplesOnlyNewer(t *testing.T) {
	lib := &fakeNVML{
		devices: []gpu.Device{h100(0)},
		samples: map[int][]gpu.ProcessSample{0: {{PID: 100, SM: 0.5, Timestamp: 40}, {PID: 100, SM: 0.1, Timestamp: 30}}},
	}
	r := newGPURig(t, lib, 16)
	for range 2 {
		if err := r.collect(); err != nil {
			t.Fatal(err)
		}
	}
	if got := lib.sinces[0]; len(got) != 2 || got[0] != 0 || got[1] != 40 {
		t.Errorf("since arguments = %v, want [0 40]", got)
	}
	if sm := r.podSample(metriccache.PodGPUUtilization, r.a); sm != 0 {
		t.Errorf("second round SM of pod a = %v, want 0 (no newer sample)", sm)
	}
	if sm := r.podSample(metriccache.PodGPUUtilization, r.b); !math.IsNaN(sm) {
		t.Errorf("pod b, which never used a GPU, has a sample %v", sm)
	}
}

// Without a driver (or in a build without NVML) the collector says so once, then runs clean, and keeps trying:
// a driver installed later is picked up.
func TestGPUWithoutDriver(t *testing.T) {
	lib := &fakeNVML{initErr: fmt.Errorf("initialising NVML: %w (ERROR_LIBRARY_NOT_FOUND)", gpu.ErrNoDriver)}
	r := newGPURig(t, lib, 16)
	err := r.collect()
	if !errors.Is(err, system.ErrUnsupported) || !strings.Contains(err.Error(), "no NVIDIA GPU driver") {
		t.Fatalf("first round = %v, want the missing driver, unsupported", err)
	}
	if err := r.collect(); err != nil {
		t.Errorf("second round = %v, want nil: said once", err)
	}
	lib.initErr, lib.devices = nil, []gpu.Device{h100(0)}
	if err := r.collect(); err != nil {
		t.Fatal(err)
	}
	if lib.inits != 3 || testutil.CollectAndCount(r.m.Devices.GPUInfo) != 1 {
		t.Errorf("after the driver appeared: %d inits, %d GPUs; want 3 and 1", lib.inits, testutil.CollectAndCount(r.m.Devices.GPUInfo))
	}
	if err := r.collect(); err != nil || lib.inits != 3 {
		t.Errorf("a later round = %v with %d inits, want no new Init", err, lib.inits)
	}
}

// The agent built as its image is (CGO_ENABLED=0, no nvml tag) has the GPU collector on, says once that it has no
// NVML, and every other collector runs.
func TestGPUCollectorOfThisBuild(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, "*")
	err := r.cycles(t, 1)
	if gpu.HasNVML() {
		t.Skip("built with NVML: the collector's result depends on the machine's driver")
	}
	if err == nil || !strings.Contains(err.Error(), "built without NVML") {
		t.Fatalf("first round = %v, want the GPU collector saying it has no NVML", err)
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(GPUName, metrics.ResultUnsupported)); got != 1 {
		t.Errorf("gpu unsupported runs = %v, want 1", got)
	}
}
