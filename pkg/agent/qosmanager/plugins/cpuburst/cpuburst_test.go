package cpuburst

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// rig is a simulated node (qosmanagertest.Node) of 8 CPUs with the plugin on it. The kubelet's part, writing each
// pod's quota from its limits, is done by kubelet().
type rig struct {
	*qosmanagertest.Node
	t *testing.T
	v cgroup.Version
	p *Plugin
}

func newRig(t *testing.T, v cgroup.Version, d cgroup.Driver) *rig {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: v, Driver: d, CPUs: 8})
	n.Store.SetNode(tu.Node("node-1").Capacity("cpu", "8").Allocatable("cpu", "8").Obj())
	p, err := New(n.Deps(DefaultInterval))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Node: n, t: t, v: v, p: p.(*Plugin)}
}

// addPod creates the pod's cgroups with the kubelet's quotas and puts it in the store.
func (r *rig) addPod(pod *corev1.Pod, u hostsim.Usage) {
	r.t.Helper()
	r.AddPod(pod, u)
	r.kubelet(pod)
}

// kubelet writes the quotas the kubelet gives pod and its containers.
func (r *rig) kubelet(pod *corev1.Pod) {
	r.t.Helper()
	l := r.Host.Layout()
	podDir := l.PodDir(pod)
	if err := r.FS.SetCPUQuota(podDir, cgroup.PodResources(pod).CPUQuota); err != nil {
		r.t.Fatal(err)
	}
	qosmanager.ForRunningContainerSpecs(pod, func(c *corev1.Container, st *corev1.ContainerStatus) {
		dir, err := l.ContainerDir(podDir, st.ContainerID)
		if err != nil {
			r.t.Fatal(err)
		}
		if err := r.FS.SetCPUQuota(dir, cgroup.ContainerResources(pod, c).CPUQuota); err != nil {
			r.t.Fatal(err)
		}
	})
}

// dir is the cgroup of pod's container (by name), or of the pod for "".
func (r *rig) dir(pod *corev1.Pod, container string) string {
	r.t.Helper()
	podDir := r.Host.Layout().PodDir(pod)
	if container == "" {
		return podDir
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == container {
			d, err := r.Host.Layout().ContainerDir(podDir, st.ContainerID)
			if err != nil {
				r.t.Fatal(err)
			}
			return d
		}
	}
	r.t.Fatalf("pod %s has no container %s", pod.Name, container)
	return ""
}

// burst is dir's burst in µs.
func (r *rig) burst(dir string) int64 {
	r.t.Helper()
	b, err := r.FS.CPUBurst(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return b.Microseconds()
}

// quota is dir's quota in µs, -1 for none.
func (r *rig) quota(dir string) int64 {
	r.t.Helper()
	q, err := r.FS.CPUQuota(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	if q.Unlimited() {
		return -1
	}
	return q.Quota.Microseconds()
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) {
	r.t.Helper()
	if err := r.p.Run(r.Ctx, spec); err != nil {
		r.t.Fatal(err)
	}
}

// tick lets a second pass on the host and the clock, with the node using nodeCores, and runs the plugin.
func (r *rig) tick(spec *slov1alpha1.NodeSLOSpec, nodeCores float64) {
	r.t.Helper()
	if err := r.Host.Advance(time.Second); err != nil {
		r.t.Fatal(err)
	}
	r.Clock.Step(time.Second)
	r.Cache.Append(r.Clock.Now(), metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeCPUUsage), Value: nodeCores})
	r.run(spec)
}

func strategy(policy slov1alpha1.CPUBurstPolicy, mutate ...func(*slov1alpha1.CPUBurstStrategy)) *slov1alpha1.NodeSLOSpec {
	s := &slov1alpha1.CPUBurstStrategy{CPUBurstConfig: slov1alpha1.CPUBurstConfig{Policy: policy}}
	for _, m := range mutate {
		m(s)
	}
	return (&slov1alpha1.NodeSLOSpec{CPUBurstStrategy: s}).WithDefaults()
}

var layouts = []struct {
	v cgroup.Version
	d cgroup.Driver
}{{cgroup.V1, cgroup.Cgroupfs}, {cgroup.V1, cgroup.Systemd}, {cgroup.V2, cgroup.Cgroupfs}, {cgroup.V2, cgroup.Systemd}}

func forLayouts(t *testing.T, fn func(t *testing.T, r *rig)) {
	for _, l := range layouts {
		t.Run(l.v.String()+"-"+string(l.d), func(t *testing.T) { fn(t, newRig(t, l.v, l.d)) })
	}
}

// The pods of TestBurst.
func burstPods() map[string]*corev1.Pod {
	return map[string]*corev1.Pod{
		// Burstable, two limited containers: container quotas 100 ms and 20 ms, pod 120 ms.
		"web": tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").
			Container("side").Requests("cpu", "100m").Limits("cpu", "200m").Running("containerd://web-side").Obj(),
		// Guaranteed with two whole CPUs, pinned by the CPU manager to CPUs 6-7.
		"db": tu.Pod("db").UID("00000000-0000-4000-8000-00000000000b").
			Container("c").Requests("cpu", "2", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Running("containerd://db-c").Obj(),
		// Guaranteed, 500m, its own percent.
		"tiny": tu.Pod("tiny").UID("00000000-0000-4000-8000-00000000000c").Annotation(slov1alpha1.AnnotationCPUBurst, `{"cpuBurstPercent":50}`).
			Container("c").Requests("cpu", "500m", "memory", "64Mi").Limits("cpu", "500m", "memory", "64Mi").Running("containerd://tiny-c").Obj(),
		// Opts out with Koordinator's annotation.
		"optout": tu.Pod("optout").UID("00000000-0000-4000-8000-00000000000d").Annotation(slov1alpha1.AnnotationCPUBurstAlias, `{"policy":"none"}`).
			Container("c").Requests("cpu", "100m").Limits("cpu", "1").Running("containerd://optout-c").Obj(),
		"bad": tu.Pod("bad").UID("00000000-0000-4000-8000-00000000000e").Annotation(slov1alpha1.AnnotationCPUBurst, `{"cpuBurstPercent":-5}`).
			Container("c").Requests("cpu", "100m").Limits("cpu", "1").Running("containerd://bad-c").Obj(),
		// Best-effort (QoS label BE) with a limit: never touched.
		"batch": tu.Pod("batch").UID("00000000-0000-4000-8000-00000000000f").Label(slov1alpha1.LabelQoSClass, "BE").
			Container("c").Requests("cpu", "100m").Limits("cpu", "1").Running("containerd://batch-c").Obj(),
		// Mid priority: its quota is the runtime hook's.
		"mid": tu.Pod("mid").UID("00000000-0000-4000-8000-000000000011").Priority(7500).
			Container("c").Requests("cpu", "100m").Limits("cpu", "1").Running("containerd://mid-c").Obj(),
		// No CPU limit: no quota, nothing to burst.
		"free": tu.Pod("free").UID("00000000-0000-4000-8000-000000000010").
			Container("c").Requests("cpu", "100m").Running("containerd://free-c").Obj(),
	}
}

// TestBurst: cpuBurstOnly sets cpu.cfs_burst_us / cpu.max.burst on service containers with a CPU limit and on
// their pods, cpuBurstPercent 1000 (the default) acting as 100; a pod's annotation sets its own percent or opts
// out; a malformed one is reported once and the node's applies; pinned, best-effort and unlimited containers are
// left alone; policy none puts every burst back to 0 and leaves the quotas as the kubelet wrote them.
func TestBurst(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		pods := burstPods()
		for _, pod := range pods {
			r.addPod(pod, hostsim.Usage{CPU: 0.1})
		}
		cpusetFile := "cgroup/" + r.dir(pods["db"], "c") + "/cpuset.cpus.effective"
		if r.v == cgroup.V1 {
			cpusetFile = "cgroup/cpuset/" + r.dir(pods["db"], "c") + "/cpuset.effective_cpus"
		}
		if err := r.Host.WriteFile(cpusetFile, "6-7\n"); err != nil {
			t.Fatal(err)
		}
		type want struct {
			pod, container string
			burst          int64
		}
		check := func(step string, wants []want) {
			t.Helper()
			for _, w := range wants {
				if got := r.burst(r.dir(pods[w.pod], w.container)); got != w.burst {
					t.Errorf("%s: burst of %s/%s is %d µs, want %d", step, w.pod, w.container, got, w.burst)
				}
			}
		}
		quotasBefore := map[string]int64{}
		for name, pod := range pods {
			quotasBefore[name] = r.quota(r.dir(pod, ""))
		}

		r.run(strategy(slov1alpha1.CPUBurstOnly))
		check("cpuBurstOnly", []want{
			{"web", "app", 100000}, {"web", "side", 20000}, {"web", "", 120000},
			{"db", "c", 0}, {"db", "", 0},
			{"tiny", "c", 25000}, {"tiny", "", 25000},
			{"optout", "c", 0}, {"optout", "", 0},
			{"bad", "c", 100000}, {"bad", "", 100000},
			{"batch", "c", 0}, {"batch", "", 0},
			{"mid", "c", 0}, {"mid", "", 0},
			{"free", "c", 0},
		})
		if r.Log.Count("cpuBurstPercent above 100 acts as 100") == 0 {
			t.Errorf("the clamp of cpuBurstPercent 1000 was not said; logs:\n%s", r.Log)
		}
		n := len(r.Exec.Audit())
		r.run(strategy(slov1alpha1.CPUBurstOnly))
		if w := r.Exec.Audit()[n:]; len(w) != 0 {
			t.Errorf("a second run with nothing changed wrote %v", w)
		}
		if got := r.Log.Count("cpuBurstPercent above 100"); got != 1 {
			t.Errorf("the clamp was said %d times, want once", got)
		}
		close(r.Events.Events)
		var events []string
		for e := range r.Events.Events {
			events = append(events, e)
		}
		if len(events) != 1 || !strings.Contains(events[0], "Warning InvalidCPUBurstAnnotation") || !strings.Contains(events[0], "cpuBurstPercent is -5, outside [0, 10000]") {
			t.Errorf("events %q, want one Warning naming the bad pod's cpuBurstPercent", events)
		}

		r.run(strategy(slov1alpha1.CPUBurstNone))
		check("none", []want{{"web", "app", 0}, {"web", "side", 0}, {"web", "", 0}, {"tiny", "c", 0}, {"tiny", "", 0}, {"bad", "c", 0}})
		for name, pod := range pods {
			if got := r.quota(r.dir(pod, "")); got != quotasBefore[name] {
				t.Errorf("the quota of pod %s went from %d to %d µs", name, quotasBefore[name], got)
			}
		}
	})
}

// TestQuotaBurst: cfsQuotaBurstOnly raises a throttled container's quota by a fifth a second up to
// cfsQuotaBurstPercent (the pod's quota with it, parents first), stops raising and lowers it step by step while the
// share pool is above sharePoolThresholdPercent, lowers it when the container no longer uses its limit, and puts
// the kubelet's quota back when the policy turns off.
func TestQuotaBurst(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		// 1 CPU limit, Burstable; 8 CPUs, none pinned; threshold 50 %: 4 cores.
		web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
		r.addPod(web, hostsim.Usage{CPU: 1, Throttled: 0.5})
		app, pod := r.dir(web, "app"), r.dir(web, "")
		s := strategy(slov1alpha1.CFSQuotaBurstOnly)

		r.tick(s, 2) // the first sample of its throttling
		if q := r.quota(app); q != 100000 {
			t.Fatalf("the first run raised the quota to %d", q)
		}
		n := len(r.Exec.Audit())
		for i, want := range []int64{120000, 144000, 172800, 207360, 248832, 298599, 300000, 300000} {
			r.tick(s, 2)
			if got := r.quota(app); got != want {
				t.Fatalf("raise %d: container quota %d µs, want %d", i, got, want)
			}
			if got := r.quota(pod); got != want {
				t.Errorf("raise %d: pod quota %d µs, want the container's %d", i, got, want)
			}
		}
		// Raising: the pod's quota (the parent) written before its container's, every time.
		var order []string
		for _, rec := range r.Exec.Audit()[n:] {
			order = append(order, map[string]string{pod: "pod", app: "container"}[rec.Dir])
		}
		if got := strings.Join(order, ","); got != strings.Repeat("pod,container,", 7)[:len(strings.Repeat("pod,container,", 7))-1] {
			t.Errorf("write order while raising: %s", got)
		}

		// The pool at 5 of 8 CPUs, 62.5 %: lowered by a fifth a run, container first, to the limit.
		n = len(r.Exec.Audit())
		for i, want := range []int64{240000, 192000, 153600, 122880, 100000, 100000} {
			r.tick(s, 5)
			if got := r.quota(app); got != want {
				t.Fatalf("lower %d: container quota %d µs, want %d", i, got, want)
			}
		}
		if recs := r.Exec.Audit()[n:]; len(recs) < 2 || recs[0].Dir != app || recs[1].Dir != pod {
			t.Errorf("lowering must write the container before the pod: %v", recs)
		}
		// Back under the threshold and still throttled: raised again; then no longer throttled and using 0.5 cores,
		// under its limit: lowered.
		r.tick(s, 2)
		if got := r.quota(app); got != 120000 {
			t.Fatalf("raised again to %d µs, want 120000", got)
		}
		if err := r.Host.SetPodUsage(web.UID, hostsim.Usage{CPU: 0.5}); err != nil {
			t.Fatal(err)
		}
		r.tick(s, 2)
		if got := r.quota(app); got != 100000 {
			t.Errorf("not throttled, under its limit: quota %d µs, want the limit 100000", got)
		}

		// Raised again, then the policy off: the kubelet's quota back at once.
		if err := r.Host.SetPodUsage(web.UID, hostsim.Usage{CPU: 1, Throttled: 0.5}); err != nil {
			t.Fatal(err)
		}
		r.tick(s, 2)
		r.tick(s, 2)
		if got := r.quota(app); got != 144000 {
			t.Fatalf("raised to %d µs, want 144000", got)
		}
		r.tick(strategy(slov1alpha1.CPUBurstNone), 2)
		if a, p := r.quota(app), r.quota(pod); a != 100000 || p != 100000 {
			t.Errorf("policy none: quotas container %d, pod %d µs, want the kubelet's 100000", a, p)
		}
	})
}

// TestQuotaBurstPeriod: with cfsQuotaBurstPeriodSeconds 3 a burst ends after three seconds, and the container is
// not raised again for three more; a pod's annotation narrows auto to cpuBurstOnly (opting out of quota burst).
func TestQuotaBurstPeriod(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Systemd)
	web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
		Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
	narrow := tu.Pod("narrow").UID("00000000-0000-4000-8000-00000000000b").Annotation(slov1alpha1.AnnotationCPUBurst, `{"policy":"cpuBurstOnly"}`).
		Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://narrow-app").Obj()
	r.addPod(web, hostsim.Usage{CPU: 1, Throttled: 0.5})
	r.addPod(narrow, hostsim.Usage{CPU: 1, Throttled: 0.5})
	app := r.dir(web, "app")
	s := strategy(slov1alpha1.CPUBurstAuto, func(s *slov1alpha1.CPUBurstStrategy) { s.CFSQuotaBurstPeriodSeconds = ptr.To[int64](3) })
	var got []string
	for range 9 {
		r.tick(s, 2)
		got = append(got, strconv.FormatInt(r.quota(app), 10))
	}
	// Raised at t=2,3,4 (burst from t=2); at t=5 it has lasted 3 s: back; no raising at t=6,7; raised at t=8.
	if want := "100000,120000,144000,172800,100000,100000,100000,120000,144000"; strings.Join(got, ",") != want {
		t.Errorf("quotas %s, want %s", strings.Join(got, ","), want)
	}
	if q, b := r.quota(r.dir(narrow, "app")), r.burst(r.dir(narrow, "app")); q != 100000 || b != 100000 {
		t.Errorf("the pod narrowed to cpuBurstOnly: quota %d, burst %d µs, want 100000 and 100000", q, b)
	}
}

// TestLeftovers: burst and raised quotas left by an earlier agent are put back on first sight with the policy
// off, once; values the kubelet wrote are not written again.
func TestLeftovers(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
		other := tu.Pod("other").UID("00000000-0000-4000-8000-00000000000b").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://other-app").Obj()
		r.addPod(web, hostsim.Usage{CPU: 0.1})
		r.addPod(other, hostsim.Usage{CPU: 0.1})
		app, pod := r.dir(web, "app"), r.dir(web, "")
		for _, d := range []string{pod, app} {
			if err := r.FS.SetCPUQuota(d, cgroup.CPUQuota{Quota: 250 * time.Millisecond, Period: cgroup.CFSPeriod}); err != nil {
				t.Fatal(err)
			}
			if err := r.FS.SetCPUBurst(d, 80*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		r.run(strategy(slov1alpha1.CPUBurstNone))
		for _, d := range []string{pod, app} {
			if q, b := r.quota(d), r.burst(d); q != 100000 || b != 0 {
				t.Errorf("%s: quota %d, burst %d µs, want the kubelet's 100000 and 0", d, q, b)
			}
		}
		if recs := r.Exec.Audit(); len(recs) != 4 {
			t.Errorf("writes %v, want four (quota and burst of the one pod and its container)", recs)
		}
		n := len(r.Exec.Audit())
		r.run(strategy(slov1alpha1.CPUBurstNone))
		if recs := r.Exec.Audit()[n:]; len(recs) != 0 {
			t.Errorf("a second run wrote %v", recs)
		}
	})
}

// TestNoBurstFile: on a kernel without the burst file (before 5.14) the plugin says so once and steps aside for
// that knob; quota burst goes on.
func TestNoBurstFile(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
		r.addPod(web, hostsim.Usage{CPU: 1, Throttled: 0.5})
		removeBurstFiles(t, r.Host.CgroupRoot())
		// A pod that arrives after the first run (its files lack burst too).
		late := tu.Pod("late").UID("00000000-0000-4000-8000-00000000000b").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://late-app").Obj()
		s := strategy(slov1alpha1.CPUBurstAuto)
		for i := range 3 {
			if i == 1 {
				if err := r.Host.AddPod(late, hostsim.Usage{CPU: 0.1}); err != nil {
					t.Fatal(err)
				}
				r.kubelet(late)
				removeBurstFiles(t, r.Host.CgroupRoot())
				r.Store.SetPod(late)
			}
			r.tick(s, 2)
		}
		if got := r.Log.Count("this kernel lacks the CFS burst file"); got != 1 {
			t.Errorf("said %d times, want once; logs:\n%s", got, r.Log)
		}
		for _, rec := range r.Exec.Audit() {
			if rec.Resource == executor.ResourceCPUBurst {
				t.Errorf("a burst write was asked for: %+v", rec)
			}
		}
		if q := r.quota(r.dir(web, "app")); q != 144000 {
			t.Errorf("quota burst without the burst file: quota %d µs, want 144000 after two raises", q)
		}
	})
}

// TestSharePoolPinned: CPUs pinned to a Guaranteed pod's container are not in the share pool, and that container's
// usage is not the pool's: 8 CPUs, 4 pinned, the node using 5 cores of which the pinned container 4: the pool is
// 1 of 4 CPUs busy, 25 %.
func TestSharePoolPinned(t *testing.T) {
	r := newRig(t, cgroup.V1, cgroup.Cgroupfs)
	db := tu.Pod("db").UID("00000000-0000-4000-8000-00000000000b").
		Container("c").Requests("cpu", "4", "memory", "1Gi").Limits("cpu", "4", "memory", "1Gi").Running("containerd://db-c").Obj()
	web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
		Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
	r.addPod(db, hostsim.Usage{CPU: 4})
	r.addPod(web, hostsim.Usage{CPU: 1, Throttled: 0.5})
	if err := r.Host.WriteFile("cgroup/cpuset/"+r.dir(db, "c")+"/cpuset.effective_cpus", "4-7\n"); err != nil {
		t.Fatal(err)
	}
	s := strategy(slov1alpha1.CFSQuotaBurstOnly)
	for range 3 {
		r.Cache.Append(r.Clock.Now().Add(time.Second), metriccache.Sample{Key: metriccache.ContainerKey(metriccache.ContainerCPUUsage, string(db.UID), "c"), Value: 4})
		r.tick(s, 5)
	}
	if l := r.p.pool.load(r.p); !l.ok || l.percent != 25 || r.p.pool.size != 4 {
		t.Errorf("share pool %d CPUs, load %+v, want 4 CPUs at 25 %%", r.p.pool.size, l)
	}
	if q := r.quota(r.dir(web, "app")); q != 144000 {
		t.Errorf("quota %d µs, want 144000: the pool is under its threshold", q)
	}
	if q, b := r.quota(r.dir(db, "c")), r.burst(r.dir(db, "c")); q != 400000 || b != 0 {
		t.Errorf("the pinned container: quota %d, burst %d µs, want the kubelet's 400000 and 0", q, b)
	}
}

// TestValidate: out-of-range values are refused with a message naming each; policy none accepts anything.
func TestValidate(t *testing.T) {
	set := func(f func(*slov1alpha1.CPUBurstStrategy)) *slov1alpha1.NodeSLOSpec {
		return strategy(slov1alpha1.CPUBurstAuto, f)
	}
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string // substrings of the error; none: accepted
	}{
		{"defaults", (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults(), nil},
		{"auto with defaults", strategy(slov1alpha1.CPUBurstAuto), nil},
		{"none ignores values", strategy(slov1alpha1.CPUBurstNone, func(s *slov1alpha1.CPUBurstStrategy) { s.CPUBurstPercent = ptr.To[int64](-1) }), nil},
		{"negative burst percent", set(func(s *slov1alpha1.CPUBurstStrategy) { s.CPUBurstPercent = ptr.To[int64](-1) }),
			[]string{"cpuBurstStrategy.cpuBurstPercent is -1, outside [0, 10000]"}},
		{"quota burst below 100", set(func(s *slov1alpha1.CPUBurstStrategy) { s.CFSQuotaBurstPercent = ptr.To[int64](50) }),
			[]string{"cpuBurstStrategy.cfsQuotaBurstPercent is 50, outside [100, 10000]"}},
		{"quota burst too high", set(func(s *slov1alpha1.CPUBurstStrategy) { s.CFSQuotaBurstPercent = ptr.To[int64](30000) }),
			[]string{"cfsQuotaBurstPercent is 30000, outside [100, 10000]"}},
		{"period below -1", set(func(s *slov1alpha1.CPUBurstStrategy) { s.CFSQuotaBurstPeriodSeconds = ptr.To[int64](-2) }),
			[]string{"cfsQuotaBurstPeriodSeconds is -2, want -1 (no limit) or 0 to 86400"}},
		// 10^10 s overflows time.Duration: a burst that would end at once, or never, depending on the sign.
		{"period that overflows a duration", set(func(s *slov1alpha1.CPUBurstStrategy) { s.CFSQuotaBurstPeriodSeconds = ptr.To[int64](1e10) }),
			[]string{"cpuBurstStrategy.cfsQuotaBurstPeriodSeconds is 10000000000, want -1 (no limit) or 0 to 86400"}},
		{"pool threshold and burst percent", set(func(s *slov1alpha1.CPUBurstStrategy) {
			s.SharePoolThresholdPercent = ptr.To[int64](101)
			s.CPUBurstPercent = ptr.To[int64](10001)
		}), []string{"sharePoolThresholdPercent is 101, outside [0, 100]", "cpuBurstPercent is 10001"}},
		{"unknown policy", strategy("always"), []string{`cpuBurstStrategy.policy is "always", want one of none, cpuBurstOnly, cfsQuotaBurstOnly, auto`}},
	}
	p := &Plugin{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, false, tt.want...)
		})
	}
}

// TestManagerKeepsTheLastGoodStrategy: through the QoS manager, a NodeSLO with an out-of-range percent is refused
// and the bursts of the last good one stay.
func TestManagerKeepsTheLastGoodStrategy(t *testing.T) {
	r := newRig(t, cgroup.V1, cgroup.Cgroupfs)
	web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
		Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
	r.addPod(web, hostsim.Usage{CPU: 0.1})
	m, err := qosmanager.NewManager(r.p.d, r.Clock, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true,
		New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return r.p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slo := func(pct int64) *slov1alpha1.NodeSLO {
		s := strategy(slov1alpha1.CPUBurstOnly, func(s *slov1alpha1.CPUBurstStrategy) { s.CPUBurstPercent = ptr.To(pct) })
		return &slov1alpha1.NodeSLO{Spec: *s}
	}
	app := r.dir(web, "app")
	for _, st := range []struct {
		pct  int64
		want int64
	}{{40, 40000}, {-10, 40000}, {70, 70000}} {
		r.Store.SetNodeSLO(slo(st.pct))
		if err := m.RunOnce(r.Ctx); err != nil {
			t.Fatal(err)
		}
		if got := r.burst(app); got != st.want {
			t.Errorf("cpuBurstPercent %d: burst %d µs, want %d", st.pct, got, st.want)
		}
	}
}

// removeBurstFiles makes the tree under root that of a kernel before 5.14.
func removeBurstFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (d.Name() == "cpu.cfs_burst_us" || d.Name() == "cpu.max.burst") {
			return os.Remove(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// resized is a copy of pod after an in-place resize of container's CPU limit: the spec asks for spec; the status
// reports applied, the limit the kubelet actuated ("" : the status reports no resources, a kubelet before 1.33).
func resized(pod *corev1.Pod, container, spec, applied string) *corev1.Pod {
	out := pod.DeepCopy()
	for i := range out.Spec.Containers {
		if c := &out.Spec.Containers[i]; c.Name == container {
			c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(spec)
			if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok && q.Cmp(resource.MustParse(spec)) > 0 {
				c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(spec)
			}
		}
	}
	for i := range out.Status.ContainerStatuses {
		if st := &out.Status.ContainerStatuses[i]; st.Name == container && applied != "" {
			st.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(applied)}}
		}
	}
	return out
}

// quotaWrites are the CFS quota writes among recs.
func quotaWrites(recs []executor.Record) []executor.Record {
	var out []executor.Record
	for _, rec := range recs {
		if rec.Resource == executor.ResourceCPUQuota {
			out = append(out, rec)
		}
	}
	return out
}

// TestResizeInPlace: an in-place resize changes the spec's CPU limit; the kubelet applies it (or defers it, or
// finds it infeasible) and writes the quotas itself. With policy none the plugin writes nothing; with cpuBurstOnly
// it writes no quota, and sizes the burst so that the kernel's rule (burst at most the quota) holds both for the
// quota in the cgroup and for the one the kubelet is about to write, so that the kubelet's write is not refused.
func TestResizeInPlace(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
		r.addPod(web, hostsim.Usage{CPU: 0.1})
		app, pod := r.dir(web, "app"), r.dir(web, "")
		check := func(step string, quota, burst int64) {
			t.Helper()
			for _, d := range []string{app, pod} {
				if q, b := r.quota(d), r.burst(d); q != quota || b != burst {
					t.Errorf("%s: %s has quota %d, burst %d µs, want %d and %d", step, d, q, b, quota, burst)
				}
			}
		}

		// Policy none: the spec asks for 500m, the kubelet has not applied it (deferred, or refused as infeasible).
		r.run(strategy(slov1alpha1.CPUBurstNone))
		n := len(r.Exec.Audit())
		r.Store.SetPod(resized(web, "app", "500m", "1"))
		r.run(strategy(slov1alpha1.CPUBurstNone))
		r.Store.SetPod(resized(web, "app", "500m", "")) // a status without resources: the spec alone
		r.run(strategy(slov1alpha1.CPUBurstNone))
		if recs := r.Exec.Audit()[n:]; len(recs) != 0 {
			t.Errorf("policy none wrote on a resize: %v", recs)
		}
		check("policy none, resize not applied", 100000, 0)
		web = resized(web, "app", "500m", "500m")
		r.kubelet(web) // applied
		r.Store.SetPod(web)
		r.run(strategy(slov1alpha1.CPUBurstNone))
		if recs := r.Exec.Audit()[n:]; len(recs) != 0 {
			t.Errorf("policy none wrote after the kubelet applied a resize: %v", recs)
		}
		check("policy none, resize applied", 50000, 0)

		// cpuBurstOnly, cpuBurstPercent 1000 (acting as 100): the burst is the quota.
		s := strategy(slov1alpha1.CPUBurstOnly)
		r.run(s)
		check("cpuBurstOnly", 50000, 50000)
		steps := []struct {
			name         string
			spec, status string
			kubelet      bool // the kubelet has written the spec's quota
			quota, burst int64
		}{
			// Up to 1 CPU, not applied yet: the quota in the cgroup bounds the burst.
			{"resize up asked", "1", "500m", false, 50000, 50000},
			{"resize up applied", "1", "1", true, 100000, 100000},
			// Down to 400m: the burst comes down at once, so that the kubelet's write of 40 ms is not refused.
			{"resize down asked", "400m", "1", false, 100000, 40000},
			{"resize down applied", "400m", "400m", true, 40000, 40000},
		}
		for _, st := range steps {
			web = resized(web, "app", st.spec, st.status)
			if st.kubelet {
				r.kubelet(web)
			}
			r.Store.SetPod(web)
			n := len(r.Exec.Audit())
			r.run(s)
			if w := quotaWrites(r.Exec.Audit()[n:]); len(w) != 0 {
				t.Errorf("%s: cpuBurstOnly wrote quotas %v", st.name, w)
			}
			check(st.name, st.quota, st.burst)
		}
		if n := r.Exec.Release(Name, executor.ResourceCPUQuota, func(string) bool { return true }); n != 0 {
			t.Errorf("the executor held %d quotas of the plugin, which raised none", n)
		}
	})
}

// TestQuotaBurstResize: a resize while a quota is raised: the kubelet's write ends the raise, and the plugin
// neither writes over it nor leaves the executor holding its raise; a raise given back is released, so the
// executor's resync does not undo a later resize; the base of a raise is the limit the kubelet applied
// (status), not the spec's.
func TestQuotaBurstResize(t *testing.T) {
	forLayouts(t, func(t *testing.T, r *rig) {
		web := tu.Pod("web").UID("00000000-0000-4000-8000-00000000000a").
			Container("app").Requests("cpu", "500m").Limits("cpu", "1").Running("containerd://web-app").Obj()
		r.addPod(web, hostsim.Usage{CPU: 1, Throttled: 0.5})
		app, pod := r.dir(web, "app"), r.dir(web, "")
		s := strategy(slov1alpha1.CFSQuotaBurstOnly)
		resync := func() {
			t.Helper()
			if err := r.Exec.Resync(r.Ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			r.tick(s, 2)
		}
		if q := r.quota(app); q != 144000 {
			t.Fatalf("raised to %d µs, want 144000", q)
		}

		// The spec asks for 2 CPUs, not applied: the raise goes on from the applied limit, 1 CPU.
		web = resized(web, "app", "2", "1")
		r.Store.SetPod(web)
		r.tick(s, 2)
		if q := r.quota(app); q != 172800 {
			t.Errorf("resize asked, not applied: quota %d µs, want 172800 (raised from the applied 1 CPU)", q)
		}

		// The kubelet applies it: its write ends the raise; nothing is written over it, now or at the resync.
		web = resized(web, "app", "2", "2")
		r.kubelet(web)
		r.Store.SetPod(web)
		if err := r.Host.SetPodUsage(web.UID, hostsim.Usage{CPU: 0.5}); err != nil {
			t.Fatal(err)
		}
		n := len(r.Exec.Audit())
		r.tick(s, 2)
		resync()
		if w := quotaWrites(r.Exec.Audit()[n:]); len(w) != 0 {
			t.Errorf("after the kubelet's resize: quota writes %v", w)
		}
		if a, p := r.quota(app), r.quota(pod); a != 200000 || p != 200000 {
			t.Errorf("after the kubelet's resize: quotas container %d, pod %d µs, want the kubelet's 200000", a, p)
		}

		// Raised again, then given back: the base written, then released: a later resize is not undone by a resync.
		if err := r.Host.SetPodUsage(web.UID, hostsim.Usage{CPU: 2, Throttled: 0.5}); err != nil {
			t.Fatal(err)
		}
		r.tick(s, 2)
		if q := r.quota(app); q != 240000 {
			t.Fatalf("raised again to %d µs, want 240000", q)
		}
		r.tick(strategy(slov1alpha1.CPUBurstNone), 2)
		if a, p := r.quota(app), r.quota(pod); a != 200000 || p != 200000 {
			t.Errorf("given back: quotas container %d, pod %d µs, want 200000", a, p)
		}
		web = resized(web, "app", "1500m", "1500m")
		r.kubelet(web)
		r.Store.SetPod(web)
		n = len(r.Exec.Audit())
		r.tick(strategy(slov1alpha1.CPUBurstNone), 2)
		resync()
		if w := quotaWrites(r.Exec.Audit()[n:]); len(w) != 0 {
			t.Errorf("after a raise was given back, a resize: quota writes %v", w)
		}
		if a, p := r.quota(app), r.quota(pod); a != 150000 || p != 150000 {
			t.Errorf("quotas container %d, pod %d µs, want the kubelet's 150000", a, p)
		}
	})
}

// The pod's own annotation is gleaner.sh's when it has both, else Koordinator's, and an error names the one read.
// Koordinator's is read as Koordinator reads it: a field Gleaner lacks is left out and named; Gleaner's own key
// refuses one.
func TestAnnotationPrecedence(t *testing.T) {
	node := &slov1alpha1.CPUBurstConfig{Policy: slov1alpha1.CPUBurstAuto}
	both := tu.Pod("both").Annotation(slov1alpha1.AnnotationCPUBurst, `{"policy":"none"}`).Annotation(slov1alpha1.AnnotationCPUBurstAlias, `{"cpuBurstPercent":-1}`).Obj()
	if _, k, _, err := podConfig(both, node); err != nil || k.burst || k.quota {
		t.Errorf("with both annotations: knobs %+v, %v; want gleaner.sh's policy none", k, err)
	}
	koord := tu.Pod("koord").Annotation(slov1alpha1.AnnotationCPUBurstAlias, `{"cpuBurstPercent":-1}`).Obj()
	if _, _, _, err := podConfig(koord, node); err == nil || !strings.Contains(err.Error(), "annotation koordinator.sh/cpuBurst=") {
		t.Errorf("a bad Koordinator annotation: %v; want an error naming it", err)
	}
	newer := tu.Pod("newer").Annotation(slov1alpha1.AnnotationCPUBurstAlias, `{"policy":"cpuBurstOnly","cpuBurstPercent":200,"burstWindow":3}`).Obj()
	cfg, k, partly, err := podConfig(newer, node)
	if err != nil || !k.burst || k.quota || *cfg.CPUBurstPercent != 200 || !strings.Contains(partly, "Gleaner does not read burstWindow") {
		t.Errorf("Koordinator's with a field Gleaner lacks: knobs %+v, %q, %v; want cpuBurstOnly at 200 %% and burstWindow named", k, partly, err)
	}
	strict := tu.Pod("strict").Annotation(slov1alpha1.AnnotationCPUBurst, `{"policy":"cpuBurstOnly","burstWindow":3}`).Obj()
	if _, _, _, err := podConfig(strict, node); err == nil || !strings.Contains(err.Error(), `unknown field "burstWindow"`) {
		t.Errorf("Gleaner's with an unknown field: %v; want it refused", err)
	}
}
