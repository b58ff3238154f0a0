package cpusuppress

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// rig is a simulated node (qosmanagertest.Node, cgroupfs driver) with the plugin on it and the node's topology in
// the cache. Usages are multiples of 0.25 cores, so that 200 ms of them is a whole number of /proc/stat's 10 ms
// ticks and the arithmetic below is exact.
type rig struct {
	*qosmanagertest.Node
	t testing.TB
	v cgroup.Version
	p *Plugin
}

func newRig(t testing.TB, v cgroup.Version, cpus int, allocatable string, cfg hostsim.Config) *rig {
	t.Helper()
	cfg.Version, cfg.Driver, cfg.CPUs = v, cgroup.Cgroupfs, cpus
	n := qosmanagertest.NewNode(t, cfg)
	top, err := topology.Read(n.Host.SysRoot())
	if err != nil {
		t.Fatal(err)
	}
	n.Cache.SetInfo(metriccache.InfoNodeTopology, top)
	n.Store.SetNode(tu.Node("node-1").Capacity("cpu", strconv.Itoa(cpus)).Allocatable("cpu", allocatable).Obj())
	p, err := New(n.Deps(DefaultInterval))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Node: n, t: t, v: v, p: p.(*Plugin)}
}

func (r *rig) addPod(pod *corev1.Pod, cores float64) {
	r.t.Helper()
	r.AddPod(pod, hostsim.Usage{CPU: cores})
}

func (r *rig) setPod(pod *corev1.Pod, cores float64) {
	r.t.Helper()
	if err := r.Host.SetPodUsage(pod.UID, hostsim.Usage{CPU: cores}); err != nil {
		r.t.Fatal(err)
	}
}

// cacheSystem is the system usage the system resource collector would have put in the cache now.
func (r *rig) cacheSystem(cores float64) {
	r.Cache.Append(r.Clock.Now(), metriccache.Sample{Key: metriccache.NodeKey(metriccache.SystemCPUUsage), Value: cores})
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) { r.t.Helper(); r.Run(r.p, spec) }

// cycle lets 200 ms pass on the host and the clock, and runs the plugin.
func (r *rig) cycle(spec *slov1alpha1.NodeSLOSpec) {
	r.t.Helper()
	if err := r.Host.Advance(DefaultInterval); err != nil {
		r.t.Fatal(err)
	}
	r.Clock.Step(DefaultInterval)
	r.run(spec)
}

// quota is the besteffort cgroup's quota in cores, -1 when unlimited.
func (r *rig) quota() float64 {
	r.t.Helper()
	q, err := r.FS.CPUQuota(r.Host.Layout().QoSDir(corev1.PodQOSBestEffort))
	if err != nil {
		r.t.Fatal(err)
	}
	return q.Cores()
}

// cpus is the cpuset.cpus file of dir as written ("" where the file does not exist).
func (r *rig) cpus(dir string) string {
	p := filepath.Join(r.Host.CgroupRoot(), dir, "cpuset.cpus")
	if r.v == cgroup.V1 {
		p = filepath.Join(r.Host.CgroupRoot(), "cpuset", dir, "cpuset.cpus")
	}
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// writes are the executor's audit records from index i on.
func (r *rig) writes(from int) []executor.Record { return r.Exec.Audit()[from:] }

func (r *rig) gauge() float64 { return promtestutil.ToFloat64(r.p.limit) }

func spec(policy slov1alpha1.CPUSuppressPolicy, threshold, minPercent int64, apps ...slov1alpha1.HostApplicationSpec) *slov1alpha1.NodeSLOSpec {
	return (&slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), CPUSuppressPolicy: policy,
			CPUSuppressThresholdPercent: ptr.To(threshold), CPUSuppressMinPercent: ptr.To(minPercent),
		},
		HostApplications: apps,
	}).WithDefaults()
}

func off() *slov1alpha1.NodeSLOSpec { return (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults() }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// A service pod (Burstable, requests 1 CPU), a best-effort batch pod (BestEffort, Gleaner QoS class BE).
func web() *corev1.Pod {
	return tu.Pod("web").UID("web-uid").Container("c").Requests("cpu", "1").Running("containerd://web").Obj()
}

func batch() *corev1.Pod {
	return tu.Pod("batch").UID("batch-uid").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("a").Running("containerd://batch-a").Container("b").Running("containerd://batch-b").Obj()
}

// TestQuotaFollowsTheServices runs the cfsQuota policy through a service's spike and its end on cgroup v1 and v2:
// tightened at once, loosened in steps, changes under 1 % of capacity skipped, the floor held.
func TestQuotaFollowsTheServices(t *testing.T) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) {
			// 8 CPUs, 7.5 allocatable: reserved 0.5. Threshold 65 %: 8 x 0.65 = 5.2 cores. Floor 5 %: 0.4 cores.
			r := newRig(t, v, 8, "7500m", hostsim.Config{})
			s := spec(slov1alpha1.CPUSuppressCFSQuota, 65, 5)
			w, b := web(), batch()
			r.addPod(w, 1)
			r.addPod(b, 1.5)
			r.Host.SetSystemUsage(hostsim.Usage{CPU: 0.25})
			r.cacheSystem(0.25)

			r.run(s)
			if q := r.quota(); q != -1 {
				t.Fatalf("the first run has no window yet and must leave the quota alone; it is %v", q)
			}
			steps := []struct {
				name string
				web  float64
				want float64
			}{
				// node 1 + 1.5 + 0.25 = 2.75; BE 1.5; non-BE 1.25; 5.2 - 1.25 - max(0, 0.5 - 0.25) = 3.7.
				{"steady", 1, 3.7},
				// non-BE 4 + 0.25 = 4.25; 5.2 - 4.25 - 0.25 = 0.7, tightened at once.
				{"spike", 4, 0.7},
				// node min(6.5 + 1.5 + 0.25, 8) = 8; non-BE 8 - 1.5 = 6.5; 5.2 - 6.5 - 0.25 < 0: the floor 0.4.
				{"bigger spike", 6.5, 0.4},
				// target 3.7 again; loosened by at most 10 %/s x 8 cores x 0.2 s = 0.16 a run: 0.4 + 0.16.
				{"spike over", 1, 0.56},
				{"loosening", 1, 0.72},
			}
			for _, st := range steps {
				r.setPod(w, st.web)
				r.cacheSystem(0.25)
				r.cycle(s)
				if got := r.quota(); !near(got, st.want) {
					t.Fatalf("%s: quota %v cores, want %v", st.name, got, st.want)
				}
				if g := r.gauge(); !near(g, st.want) {
					t.Errorf("%s: gauge %v, want %v", st.name, g, st.want)
				}
			}
			// Up to 3.7 in steps of at most 0.16: (3.7 - 0.72) / 0.16 = 18.6, so 19 more runs.
			prev, runs := r.quota(), 0
			for ; runs < 30 && !near(prev, 3.7); runs++ {
				r.cacheSystem(0.25)
				r.cycle(s)
				q := r.quota()
				if q <= prev || q-prev > 0.16+1e-6 {
					t.Fatalf("run %d loosened from %v to %v, want a step of at most 0.16", runs, prev, q)
				}
				prev = q
			}
			if !near(prev, 3.7) || runs != 19 {
				t.Fatalf("after %d runs the quota is %v, want 3.7 after 19", runs, prev)
			}

			// System usage 0.2: 5.2 - 1.25 - (0.5 - 0.2) = 3.65, 0.05 below 3.7: under 1 % of 8 cores (0.08),
			// skipped, with nothing written.
			n := len(r.Exec.Audit())
			r.cacheSystem(0.2)
			r.cycle(s)
			if q := r.quota(); !near(q, 3.7) || len(r.writes(n)) != 0 {
				t.Errorf("a change of 0.05 cores: quota %v (want 3.7 kept), writes %v", q, r.writes(n))
			}
			// System usage 0.1: 5.2 - 1.25 - 0.4 = 3.55, 0.15 below: tightened.
			r.cacheSystem(0.1)
			r.cycle(s)
			if q := r.quota(); !near(q, 3.55) {
				t.Errorf("a change of 0.15 cores: quota %v, want 3.55", q)
			}
			// System usage 0.75 above the 0.5 reserved: max(system, reserved) is the system's, already in non-BE.
			// node 1 + 1.5 + 0.75 = 3.25; non-BE 1.75; 5.2 - 1.75 - 0 = 3.45.
			r.Host.SetSystemUsage(hostsim.Usage{CPU: 0.75})
			r.cacheSystem(0.75)
			r.cycle(s)
			if q := r.quota(); !near(q, 3.45) {
				t.Errorf("system above reserved: quota %v, want 3.45", q)
			}
		})
	}
}

// TestQuotaClampsBatchPodsOnV1: the runtime hook gives a batch pod and its containers a quota of their own (2 cores
// here, from batch-cpu 2000). On cgroup v1 the kernel refuses a besteffort quota below a child's, so suppression
// lowers the larger ones to its own in the same batch, children first; smaller ones stay. That includes a container
// runc has just created, whose status does not say it runs yet (batch-new): its quota would make the kernel refuse
// the whole tightening. On v2 nothing but the besteffort cgroup is written.
func TestQuotaClampsBatchPodsOnV1(t *testing.T) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) {
			r := newRig(t, v, 8, "7500m", hostsim.Config{})
			s := spec(slov1alpha1.CPUSuppressCFSQuota, 65, 5)
			w, b := web(), batch()
			small := tu.Pod("small").UID("small-uid").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Running("containerd://small-c").Obj()
			r.addPod(w, 1)
			r.addPod(b, 1.5)
			r.addPod(small, 0)
			r.Host.SetSystemUsage(hostsim.Usage{CPU: 0.25})
			l := r.Host.Layout()
			podDir := l.PodDirOf(corev1.PodQOSBestEffort, b.UID)
			ctrA, ctrB, fresh := podDir+"/batch-a", podDir+"/batch-b", podDir+"/batch-new"
			if err := os.MkdirAll(r.FS.Dir("cpu", fresh), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.max"} {
				if err := os.WriteFile(filepath.Join(r.FS.Dir("cpu", fresh), f), []byte("max 100000"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			smallDir := l.PodDirOf(corev1.PodQOSBestEffort, small.UID)
			hook := map[string]float64{podDir: 2, ctrA: 2, ctrB: 1, fresh: 2, smallDir: 0.5, smallDir + "/small-c": 0.5}
			for dir, cores := range hook {
				if err := r.FS.SetCPUQuota(dir, cgroup.CPUQuota{Quota: time.Duration(cores * float64(100*time.Millisecond)), Period: 100 * time.Millisecond}); err != nil {
					t.Fatal(err)
				}
			}
			r.cacheSystem(0.25)
			r.run(s)
			r.cacheSystem(0.25)
			r.cycle(s) // steady: 3.7 cores, above every pod's quota
			n := len(r.Exec.Audit())
			r.setPod(w, 4)
			r.cacheSystem(0.25)
			r.cycle(s) // spike: 0.7 cores
			if q := r.quota(); !near(q, 0.7) {
				t.Fatalf("besteffort quota %v, want 0.7", q)
			}
			var order []string
			for _, rec := range r.writes(n) {
				order = append(order, rec.Dir)
			}
			want := []string{l.QoSDir(corev1.PodQOSBestEffort)}
			if v == cgroup.V1 {
				want = []string{ctrA, ctrB, fresh, podDir, l.QoSDir(corev1.PodQOSBestEffort)}
			}
			if diff := cmp.Diff(want, order); diff != "" {
				t.Errorf("writes of the spike, in order (-want +got):\n%s", diff)
			}
			for dir, cores := range hook {
				want := cores
				if v == cgroup.V1 && cores > 0.7 {
					want = 0.7
				}
				q, err := r.FS.CPUQuota(dir)
				if err != nil {
					t.Fatal(err)
				}
				if !near(q.Cores(), want) {
					t.Errorf("%s: quota %v cores, want %v", dir, q.Cores(), want)
				}
			}
		})
	}
}

// TestKernelMinimumQuota: with no floor, a node busy beyond the threshold leaves best-effort pods the kernel's
// smallest quota, 1 ms a 100 ms period, not 0 (which the kernel refuses).
func TestKernelMinimumQuota(t *testing.T) {
	r := newRig(t, cgroup.V1, 4, "4", hostsim.Config{})
	s := spec(slov1alpha1.CPUSuppressCFSQuota, 50, 0)
	w := web()
	r.addPod(w, 3)
	r.addPod(batch(), 1)
	r.run(s)
	r.cycle(s) // 4 x 0.5 - 3 - 0 = -1: 0 cores, written as 1 ms / 100 ms.
	if q := r.quota(); !near(q, 0.01) {
		t.Errorf("quota %v cores, want 0.01 (1 ms per 100 ms)", q)
	}
	if got := quotaOf(0.0000001); got.Quota != time.Millisecond || got.Period != 100*time.Millisecond {
		t.Errorf("quotaOf(~0) = %v", got)
	}
	if got := quotaOf(1.2345678); got.Quota != 123457*time.Microsecond {
		t.Errorf("quotaOf(1.2345678) = %v, want 123457us (rounded to the file's microseconds)", got.Quota)
	}
}

// TestBestEffortHostApplications: node - BE counts every host application; best-effort ones are taken out again
// (from the cache), services' ones stay in non-BE.
func TestBestEffortHostApplications(t *testing.T) {
	tests := []struct {
		name string
		app  slov1alpha1.HostApplicationSpec
		want float64
	}{
		// node 1 + 1.5 + 0.5 + 0.25 = 3.25; BE 1.5; BE host applications 0.5; non-BE 1.25;
		// 5.2 - 1.25 - (0.5 - 0.25) = 3.7, as without the application.
		{"best-effort application", slov1alpha1.HostApplicationSpec{Name: "spark", QoS: slov1alpha1.QoSBE}, 3.7},
		{"batch-priority application", slov1alpha1.HostApplicationSpec{Name: "spark", Priority: slov1alpha1.PriorityBatch}, 3.7},
		// non-BE 1.75: 5.2 - 1.75 - 0.25 = 3.2.
		{"service application", slov1alpha1.HostApplicationSpec{Name: "nginx", QoS: slov1alpha1.QoSLS}, 3.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, cgroup.V1, 8, "7500m", hostsim.Config{})
			s := spec(slov1alpha1.CPUSuppressCFSQuota, 65, 0, tt.app)
			base, parent, rel := tt.app.CgroupLocation()
			if err := r.Host.AddHostApp(tt.app.Name, r.Host.Layout().HostDir(cgroup.HostBase(base), parent, rel), hostsim.Usage{CPU: 0.5}); err != nil {
				t.Fatal(err)
			}
			r.addPod(web(), 1)
			r.addPod(batch(), 1.5)
			r.Host.SetSystemUsage(hostsim.Usage{CPU: 0.25})
			r.cacheSystem(0.25)
			r.Cache.Append(r.Clock.Now(), metriccache.Sample{Key: metriccache.NamedKey(metriccache.HostAppCPUUsage, tt.app.Name), Value: 0.5})
			r.run(s)
			r.cycle(s)
			if q := r.quota(); !near(q, tt.want) {
				t.Errorf("quota %v, want %v", q, tt.want)
			}
		})
	}
}

// cpusetScene is a node of 8 CPUs, nothing reserved, whose besteffort cgroup starts with a 1-core quota left from
// before, with:
//   - db, Guaranteed with one whole CPU, which the CPU manager pinned to CPU 7; it uses 0.5 cores;
//   - batch, best-effort (Gleaner class BE, Kubernetes BestEffort) with two containers; 1 core;
//   - etl, best-effort by its label but requesting CPU, so in the burstable cgroup; 1 core;
//   - plain, Kubernetes BestEffort without a Gleaner class: in the besteffort cgroup, so confined with it; idle.
type cpusetScene struct {
	*rig
	l                   cgroup.Layout
	qos                 string
	db, b, etl, plain   *corev1.Pod
	written, containers []string // the cgroups the cpuset is written to, sorted; the container cgroups among them
}

func newCPUSetScene(t *testing.T, v cgroup.Version) *cpusetScene {
	sc := &cpusetScene{rig: newRig(t, v, 8, "8", hostsim.Config{BEQuotaCores: 1})}
	sc.l = sc.Host.Layout()
	sc.qos = sc.l.QoSDir(corev1.PodQOSBestEffort)
	sc.db = tu.Pod("db").UID("db-uid").Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://db").Obj()
	sc.etl = tu.Pod("etl").UID("etl-uid").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Requests("cpu", "500m").Running("containerd://etl").Obj()
	sc.plain = tu.Pod("plain").UID("plain-uid").Container("c").Running("containerd://plain").Obj()
	sc.b = batch()
	sc.addPod(sc.db, 0.5)
	sc.addPod(sc.b, 1)
	sc.addPod(sc.etl, 1)
	sc.addPod(sc.plain, 0)
	effective := "cpuset/" + sc.ctr(sc.db, "containerd://db") + "/cpuset.effective_cpus"
	if v == cgroup.V2 {
		effective = sc.ctr(sc.db, "containerd://db") + "/cpuset.cpus.effective"
		// hostsim's v2 tree has no cpuset.cpus files: give the two cgroups the plugin writes on v2 one.
		for _, d := range []string{sc.qos, sc.l.PodDir(sc.etl)} {
			if err := sc.Host.WriteFile("cgroup/"+d+"/cpuset.cpus", "\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sc.Host.WriteFile("cgroup/"+effective, "7\n"); err != nil {
		t.Fatal(err)
	}
	sc.containers = []string{sc.ctr(sc.b, "containerd://batch-a"), sc.ctr(sc.b, "containerd://batch-b"), sc.ctr(sc.etl, "containerd://etl"), sc.ctr(sc.plain, "containerd://plain")}
	sc.written = []string{sc.qos, sc.l.PodDir(sc.etl)}
	if v == cgroup.V1 {
		sc.written = append(sc.written, sc.l.PodDir(sc.b), sc.l.PodDir(sc.plain))
		sc.written = append(sc.written, sc.containers...)
	}
	slices.Sort(sc.written)
	return sc
}

func (sc *cpusetScene) ctr(p *corev1.Pod, id string) string {
	d, _ := sc.l.ContainerDir(sc.l.PodDir(p), id)
	return d
}

// expectCPUSets checks that the writes from index from on gave exactly the scene's cgroups a cpuset, each the one
// want returns for it.
func (sc *cpusetScene) expectCPUSets(t *testing.T, from int, want func(dir string) string) {
	t.Helper()
	values := map[string]string{}
	var dirs []string
	for _, rec := range sc.writes(from) {
		if rec.Resource == executor.ResourceCPUSet && rec.Result == executor.ResultWritten {
			dirs = append(dirs, rec.Dir)
			values[rec.Dir] = rec.Value
		}
	}
	slices.Sort(dirs)
	if d := cmp.Diff(sc.written, slices.Compact(dirs)); d != "" {
		t.Fatalf("cgroups given a cpuset (-want +got):\n%s", d)
	}
	for _, d := range sc.written {
		if w := want(d); values[d] != w || sc.cpus(d) != w {
			t.Errorf("%s: written %q, file %q, want %s", d, values[d], sc.cpus(d), w)
		}
	}
}

// TestCPUSetPolicy runs the cpuset policy, a switch to cfsQuota, the strategy turned off and on again, on cgroup v1
// (every confined pod and container cgroup written) and v2 (the besteffort cgroup and best-effort pods outside it).
func TestCPUSetPolicy(t *testing.T) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) {
			sc := newCPUSetScene(t, v)
			s := spec(slov1alpha1.CPUSuppressCPUSet, 50, 0)
			sc.run(s)
			if q := sc.quota(); q != -1 {
				t.Errorf("the cpuset policy must lift the quota left from before: %v", q)
			}
			// Threshold 50 %: 4 cores. node 0.5 + 1 + 1 = 2.5; BE: the besteffort cgroup (1) and etl (1) = 2;
			// non-BE 0.5; 4 - 0.5 - 0 = 3.5: 4 CPUs, whole cores from the top, without db's CPU 7: 3-6.
			n := len(sc.Exec.Audit())
			sc.cycle(s)
			sc.expectCPUSets(t, n, func(string) string { return "3-6" })
			if got := sc.cpus(sc.l.PodDir(sc.db)); v == cgroup.V1 && got != "0-7" {
				t.Errorf("the Guaranteed pod's cpuset was changed to %s", got)
			}
			if g := sc.gauge(); g != 4 {
				t.Errorf("gauge %v, want 4 CPUs", g)
			}

			sc.throughTheFloor(t, s)

			// Switch to cfsQuota: the cpusets go back to every CPU (containers: every CPU but db's), and the
			// quota follows the formula at once, etl now outside what the knob confines, so non-BE:
			// node 2.5 - BE 1 = 1.5; 4 - 1.5 = 2.5 cores.
			n = len(sc.Exec.Audit())
			sc.cycle(spec(slov1alpha1.CPUSuppressCFSQuota, 50, 0))
			sc.expectCPUSets(t, n, func(d string) string {
				if slices.Contains(sc.containers, d) {
					return "0-6"
				}
				return "0-7"
			})
			if q := sc.quota(); !near(q, 2.5) {
				t.Errorf("quota after the switch %v, want 2.5", q)
			}

			// Off: the quota is lifted, once; the cpusets, restored already, are not written again.
			n = len(sc.Exec.Audit())
			sc.cycle(off())
			sc.cycle(off())
			if got := sc.writes(n); len(got) != 1 || got[0].Resource != executor.ResourceCPUQuota || sc.quota() != -1 {
				t.Errorf("turning suppression off wrote %v (quota %v), want the quota lifted once", got, sc.quota())
			}
			if g := sc.gauge(); g != -1 {
				t.Errorf("gauge %v while off, want -1", g)
			}

			// On again with cpuset: the first run measures, the second decides (3-6 as at first).
			sc.cycle(s)
			sc.cycle(s)
			if got := sc.cpus(sc.qos); got != "3-6" {
				t.Errorf("on again: cpuset %s, want 3-6", got)
			}
		})
	}
}

// throughTheFloor: db spikes to 3 cores and back under the cpuset policy at 50 % (TestCPUSetPolicy's second step):
// the share falls below the floor of two CPUs, where the quota holds it, and climbs back through it.
func (sc *cpusetScene) throughTheFloor(t *testing.T, s *slov1alpha1.NodeSLOSpec) {
	t.Helper()
	// db spikes to 3: non-BE 3; 4 - 3 = 1 core: 2 CPUs (the minimum), 5-6, at once; a share below that
	// floor is held by the besteffort cgroup's quota besides: 1 core.
	sc.setPod(sc.db, 3)
	sc.cycle(s)
	if got, q := sc.cpus(sc.qos), sc.quota(); got != "5-6" || !near(q, 1) {
		t.Errorf("after the spike the best-effort cpuset is %s and the quota %v, want 5-6 and 1 core", got, q)
	}
	if g := sc.gauge(); !near(g, 1) {
		t.Errorf("gauge %v below the floor, want the quota, 1", g)
	}
	// db back to 0.5: target 3.5, loosened by 0.16 a run: the quota follows, 1.16, 1.32 ... 1.96, on the
	// same 2 CPUs (only quotas written), until the share passes 2 (after 7 runs: 1 + 7 x 0.16 = 2.12):
	// 3 CPUs, 4-6, and the quota lifted.
	sc.setPod(sc.db, 0.5)
	n := len(sc.Exec.Audit())
	for range 6 {
		sc.cycle(s)
	}
	for _, w := range sc.writes(n) {
		if w.Resource != executor.ResourceCPUQuota {
			t.Errorf("a share still under 2 CPUs wrote %s %s %s", w.Resource, w.Dir, w.Value)
		}
	}
	if got, q := sc.cpus(sc.qos), sc.quota(); got != "5-6" || !near(q, 1.96) {
		t.Errorf("after 6 steps the best-effort cpuset is %s and the quota %v, want 5-6 and 1.96", got, q)
	}
	sc.cycle(s)
	if got, q := sc.cpus(sc.qos), sc.quota(); got != "4-6" || q != -1 {
		t.Errorf("after 7 steps the best-effort cpuset is %s and the quota %v, want 4-6 and unlimited", got, q)
	}
	if g := sc.gauge(); g != 3 {
		t.Errorf("gauge %v back above the floor, want 3 CPUs", g)
	}
}

// TestCPUSetPolicyOnASmallNode: on a node of two CPUs the cpuset policy's floor of two CPUs is the whole node, so
// the share is held by the besteffort cgroup's quota alone (on v1 with the batch pods' own quotas lowered under
// it, as the cfsQuota policy does); the cpuset stays every CPU, and turning suppression off lifts the quota.
func TestCPUSetPolicyOnASmallNode(t *testing.T) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) {
			r := newRig(t, v, 2, "2", hostsim.Config{})
			s := spec(slov1alpha1.CPUSuppressCPUSet, 65, 0)
			w, b := web(), batch()
			r.addPod(w, 0.5)
			r.addPod(b, 1.5)
			podDir := r.Host.Layout().PodDirOf(corev1.PodQOSBestEffort, b.UID)
			if err := r.FS.SetCPUQuota(podDir, cgroup.CPUQuota{Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			r.run(s)
			// 2 x 65 % - 0.5 = 0.8 cores: below two CPUs.
			r.cycle(s)
			if q, g := r.quota(), r.gauge(); !near(q, 0.8) || !near(g, 0.8) {
				t.Fatalf("besteffort quota %v, gauge %v; want 0.8 cores for both", q, g)
			}
			if got := r.cpus(r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)); got != "" && got != "0-1" {
				t.Errorf("the best-effort cpuset is %s, want every CPU (0-1)", got)
			}
			q, err := r.FS.CPUQuota(podDir)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[cgroup.Version]float64{cgroup.V1: 0.8, cgroup.V2: 1.5}[v]; !near(q.Cores(), want) {
				t.Errorf("the batch pod's own quota is %v cores, want %v", q.Cores(), want)
			}
			// The service quiets: the quota loosens by 10 % of the node a second (0.04 a run).
			r.setPod(w, 0)
			r.cycle(s)
			if q := r.quota(); !near(q, 0.84) {
				t.Errorf("loosening: quota %v, want 0.84", q)
			}
			n := len(r.Exec.Audit())
			r.cycle(off())
			if q := r.quota(); q != -1 {
				t.Errorf("off: quota %v, want unlimited", q)
			}
			for _, rec := range r.writes(n) {
				if rec.Resource == executor.ResourceCPUQuota && rec.Dir == podDir {
					t.Errorf("turning suppression off wrote the batch pod's quota (%s): the runtime hook owns it", rec.Value)
				}
			}
		})
	}
}

// TestOffRestoresOnlyWhatWasLeft: with suppression off, a node whose besteffort cgroup has no limit gets nothing
// written (so the executor holds nothing to re-assert), and limits an earlier agent left are lifted, once.
func TestOffRestoresOnlyWhatWasLeft(t *testing.T) {
	tests := []struct {
		name string
		cfg  hostsim.Config
		want []string // resource and dir of each write
	}{
		{name: "nothing left", cfg: hostsim.Config{}},
		{name: "a quota and a cpuset left", cfg: hostsim.Config{BEQuotaCores: 1, BECPUs: "2-3"},
			want: []string{"cpu.cfs_quota_us kubepods/besteffort max 100000", "cpuset.cpus kubepods/besteffort 0-3", "cpuset.cpus kubepods/besteffort/poduid-plain 0-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, cgroup.V1, 4, "4", tt.cfg)
			r.addPod(tu.Pod("plain").Obj(), 0)
			for range 3 {
				r.cycle(off())
			}
			var got []string
			for _, rec := range r.writes(0) {
				got = append(got, string(rec.Resource)+" "+rec.Dir+" "+rec.Value)
			}
			slices.Sort(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("writes (-want +got):\n%s", d)
			}
		})
	}
}

// TestNewPodsGetTheCPUSet: a best-effort pod that starts while the cpuset policy holds gets the set at the next run.
func TestNewPodsGetTheCPUSet(t *testing.T) {
	r := newRig(t, cgroup.V1, 4, "4", hostsim.Config{})
	s := spec(slov1alpha1.CPUSuppressCPUSet, 50, 0)
	r.addPod(batch(), 0.5)
	r.run(s)
	r.cycle(s) // 2 - 0 = 2 cores: CPUs 2-3.
	late := tu.Pod("late").UID("late-uid").Container("c").Running("containerd://late").Obj()
	r.addPod(late, 0)
	r.cycle(s)
	l := r.Host.Layout()
	ctr, _ := l.ContainerDir(l.PodDir(late), "containerd://late")
	for _, d := range []string{l.PodDir(late), ctr} {
		if got := r.cpus(d); got != "2-3" {
			t.Errorf("%s: cpuset %s, want 2-3", d, got)
		}
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		name      string
		in        inputs
		threshold int64
		min       int64
		want      float64
	}{
		// 10 x 0.7 = 7; non-BE 6 - 2 - 0 = 4; reserved 1 above system 0.5: 0.5 more. 7 - 4 - 0.5 = 2.5.
		{"reserved above system", inputs{capacity: 10, reserved: 1, node: 6, be: 2, system: 0.5}, 70, 0, 2.5},
		// system 1.5 above reserved 1: already in non-BE. 7 - 4 = 3.
		{"system above reserved", inputs{capacity: 10, reserved: 1, node: 6, be: 2, system: 1.5}, 70, 0, 3},
		// BE host applications 1 leave non-BE: 6 - 2 - 1 = 3; 7 - 3 - 0.5 = 3.5.
		{"best-effort host applications", inputs{capacity: 10, reserved: 1, node: 6, be: 2, beHostApps: 1, system: 0.5}, 70, 0, 3.5},
		// 7 - 8 - 0 < 0: the floor, 10 x 0.2 = 2.
		{"floor", inputs{capacity: 10, node: 9, be: 1}, 70, 20, 2},
		// node below BE (ticks against nanoseconds over a short window): non-BE 0, not negative. 7 - 0 = 7.
		{"non-BE never negative", inputs{capacity: 10, node: 1.9, be: 2}, 70, 0, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := tt.in.share(tt.threshold, tt.min)
			if !near(got, tt.want) {
				t.Errorf("share = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStep(t *testing.T) {
	tests := []struct {
		name         string
		cur, target  float64
		wantNext     float64
		wantChanged  bool
		capacity, up float64
	}{
		{name: "tighten at once", cur: 6, target: 1, capacity: 10, up: 0.2, wantNext: 1, wantChanged: true},
		{name: "loosen by at most up", cur: 1, target: 6, capacity: 10, up: 0.2, wantNext: 1.2, wantChanged: true},
		{name: "loosen the last bit", cur: 5.85, target: 6, capacity: 10, up: 0.2, wantNext: 6, wantChanged: true},
		// 1 % of 10 is 0.1.
		{name: "skip a small rise", cur: 5, target: 5.09, capacity: 10, up: 0.2, wantNext: 5},
		{name: "skip a small drop", cur: 5, target: 4.91, capacity: 10, up: 0.2, wantNext: 5},
		{name: "1 % is made", cur: 5, target: 4.9, capacity: 10, up: 0.2, wantNext: 4.9, wantChanged: true},
		// On 2 CPUs 1 % is 0.02 cores, but over a window of 1 s two ticks of 10 ms are 0.02 cores too; the larger
		// decides. (Over 200 ms: 0.1 cores, TestMinChange.)
		{name: "2 CPUs: 0.02 is made", cur: 1, target: 0.98, capacity: 2, up: 0.2, wantNext: 0.98, wantChanged: true},
		{name: "2 CPUs: 0.019 is not", cur: 1, target: 0.981, capacity: 2, up: 0.2, wantNext: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, changed := step(tt.cur, tt.target, minChange(tt.capacity, time.Second), tt.up)
			if !near(next, tt.wantNext) || changed != tt.wantChanged {
				t.Errorf("step = %v, %v; want %v, %v", next, changed, tt.wantNext, tt.wantChanged)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	p := &Plugin{}
	with := func(f func(*slov1alpha1.ResourceThresholdStrategy)) *slov1alpha1.NodeSLOSpec {
		s := spec(slov1alpha1.CPUSuppressCPUSet, 65, 0)
		f(s.ResourceUsedThresholdWithBE)
		return s
	}
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string // substrings of the error; none: accepted
	}{
		{name: "defaults, off", spec: off()},
		{name: "valid", spec: spec(slov1alpha1.CPUSuppressCFSQuota, 65, 10)},
		{name: "threshold 100, min 100", spec: spec(slov1alpha1.CPUSuppressCFSQuota, 100, 100)},
		{name: "threshold 0", spec: spec(slov1alpha1.CPUSuppressCPUSet, 0, 0),
			want: []string{"resourceUsedThresholdWithBE.cpuSuppressThresholdPercent is 0, outside [1, 100]"}},
		{name: "threshold above 100", spec: spec(slov1alpha1.CPUSuppressCPUSet, 150, 0),
			want: []string{"cpuSuppressThresholdPercent is 150, outside [1, 100]"}},
		{name: "min above threshold", spec: spec(slov1alpha1.CPUSuppressCPUSet, 50, 60),
			want: []string{"resourceUsedThresholdWithBE.cpuSuppressMinPercent (60) is above resourceUsedThresholdWithBE.cpuSuppressThresholdPercent (50)"}},
		{name: "min negative", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) { s.CPUSuppressMinPercent = ptr.To[int64](-1) }),
			want: []string{"cpuSuppressMinPercent is -1, outside [0, 100]"}},
		{name: "unknown policy", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) { s.CPUSuppressPolicy = "freeze" }),
			want: []string{`cpuSuppressPolicy is "freeze", want "cfsQuota" or "cpuset"`}},
		{name: "every error at once", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) {
			s.CPUSuppressThresholdPercent, s.CPUSuppressPolicy = ptr.To[int64](0), "freeze"
		}), want: []string{"cpuSuppressThresholdPercent is 0", "; ", `cpuSuppressPolicy is "freeze"`}},
		{name: "off with bad values: nothing to enforce", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) {
			s.Enable, s.CPUSuppressThresholdPercent, s.CPUSuppressPolicy = ptr.To(false), ptr.To[int64](0), "freeze"
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, false, tt.want...)
		})
	}
}

// TestRefusedNodeSLOKeepsTheLastLimit: through the Manager, a NodeSLO the plugin refuses leaves the last accepted
// one in force.
func TestRefusedNodeSLOKeepsTheLastLimit(t *testing.T) {
	r := newRig(t, cgroup.V1, 8, "7500m", hostsim.Config{})
	r.addPod(web(), 1)
	r.addPod(batch(), 1.5)
	r.Host.SetSystemUsage(hostsim.Usage{CPU: 0.25})
	m, err := qosmanager.NewManager(r.p.d, r.Clock, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true,
		New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return r.p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slo := &slov1alpha1.NodeSLO{Spec: *spec(slov1alpha1.CPUSuppressCFSQuota, 65, 0)}
	slo.Name = "node-1"
	r.Store.SetNodeSLO(slo)
	once := func() {
		t.Helper()
		_ = r.Host.Advance(DefaultInterval)
		r.Clock.Step(DefaultInterval)
		r.cacheSystem(0.25)
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	once()
	once() // 3.7, as in TestQuotaFollowsTheServices.
	bad := slo.DeepCopy()
	bad.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent = ptr.To[int64](0)
	r.Store.SetNodeSLO(bad)
	once()
	if q := r.quota(); !near(q, 3.7) {
		t.Errorf("with a refused NodeSLO the quota is %v, want 3.7 kept", q)
	}
}

func TestNewNeedsItsDeps(t *testing.T) {
	_, err := New(qosmanager.Deps{})
	if err == nil || !strings.Contains(err.Error(), "missing States, Cache, Executor, Cgroups, Proc, Clock") {
		t.Errorf("New without deps: %v", err)
	}
}

// TestMinChange: a change must exceed 1 % of the node and two of /proc/stat's ticks over the window.
func TestMinChange(t *testing.T) {
	tests := []struct {
		capacity float64
		window   time.Duration
		want     float64
	}{
		{2, 200 * time.Millisecond, 0.1},   // 2 x 10 ms / 200 ms = 0.1 > 1 % of 2 = 0.02
		{64, 200 * time.Millisecond, 0.64}, // 1 % of 64 = 0.64 > 0.1
		{2, time.Second, 0.02},             // 2 x 10 ms / 1 s = 0.02 = 1 % of 2
		{8, 0, 0.08},                       // no window yet: 1 % of 8
	}
	for _, tt := range tests {
		if got := minChange(tt.capacity, tt.window); !near(got, tt.want) {
			t.Errorf("minChange(%v, %s) = %v, want %v", tt.capacity, tt.window, got, tt.want)
		}
	}
}

// TestReservationOfAnAmplifiedNode: gleaner-manager's node webhook amplified the node's allocatable cpu (8 raw cores
// x 1.5 = 12); the kubelet's reservation is still capacity 10 - raw 8 = 2 cores, not 10 - 12 (none).
func TestReservationOfAnAmplifiedNode(t *testing.T) {
	r := newRig(t, cgroup.V1, 10, "12", hostsim.Config{})
	n := tu.Node("node-1").Capacity("cpu", "10").Allocatable("cpu", "12").Obj()
	n.Annotations = map[string]string{slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.50}`, slov1alpha1.AnnotationRawAllocatable: `{"cpu":"8"}`}
	r.Store.SetNode(n)
	capacity, reserved, err := r.p.capacity()
	if err != nil || capacity != 10 || reserved != 2 {
		t.Errorf("capacity, reserved = %v, %v, %v; want 10, 2", capacity, reserved, err)
	}
}
