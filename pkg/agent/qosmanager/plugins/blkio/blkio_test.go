package blkio

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

const mi = 1 << 20

// The disks of every fixture /sys: vda (253:0) with partitions vda1 and vda2, vdb (253:16), loop0 (7:0); LVM
// volume group "vg0" with two logical volumes, data (dm-0, on vda2) and "my-lv" (dm-1, on dm-2: a dm-crypt device
// on vdb); a logical volume of another group, "vg0-x" (dm-3, on vdb: its dashes are doubled in dm/name, so its
// group is "vg0-x", not "vg0"); and a dm-crypt device whose name looks like an LVM one (dm-2).
var sysFiles = map[string]string{
	"block/vda/dev": "253:0\n", "block/vda/vda1/partition": "1\n", "block/vda/vda2/partition": "2\n",
	"block/vdb/dev": "253:16\n", "block/loop0/dev": "7:0\n",
	"block/dm-0/dev": "252:0\n", "block/dm-0/dm/name": "vg0-data\n", "block/dm-0/dm/uuid": "LVM-aaaabbbb\n", "block/dm-0/slaves/vda2": "",
	"block/dm-1/dev": "252:1\n", "block/dm-1/dm/name": "vg0-my--lv\n", "block/dm-1/dm/uuid": "LVM-aaaacccc\n", "block/dm-1/slaves/dm-2": "",
	"block/dm-2/dev": "252:2\n", "block/dm-2/dm/name": "vg0-crypt\n", "block/dm-2/dm/uuid": "CRYPT-LUKS2-dddd\n", "block/dm-2/slaves/vdb": "",
	"block/dm-3/dev": "252:3\n", "block/dm-3/dm/name": "vg0--x-data\n", "block/dm-3/dm/uuid": "LVM-eeee\n", "block/dm-3/slaves/vdb": "",
}

var (
	vda   = cgroup.Device{Major: 253, Minor: 0}
	vdb   = cgroup.Device{Major: 253, Minor: 16}
	loop0 = cgroup.Device{Major: 7, Minor: 0}
)

// rig is a simulated node (qosmanagertest.Node) with the plugin on it and the sysfs of sysFiles.
type rig struct {
	*qosmanagertest.Node
	t *testing.T
	v cgroup.Version
	p *Plugin
}

func newRig(t *testing.T, v cgroup.Version, driver cgroup.Driver) *rig {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: v, Driver: driver})
	for rel, content := range sysFiles {
		if err := n.Host.WriteFile(filepath.Join("sys", rel), content); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(n.Deps(DefaultInterval))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Node: n, t: t, v: v, p: p.(*Plugin)}
}

// blkioFiles gives cgroup dir the kernel's block I/O files, no caps and the default weight; without weight, no
// weight file (v1 without BFQ).
func (r *rig) blkioFiles(dir string, weight bool) {
	r.t.Helper()
	files := map[string]string{"io.max": ""}
	if weight {
		files["io.weight"] = "default 100\n"
	}
	if r.v == cgroup.V1 {
		files = map[string]string{}
		for _, f := range []string{"read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"} {
			files["blkio/"+dir+"/blkio.throttle."+f] = ""
		}
		if weight {
			files["blkio/"+dir+"/blkio.bfq.weight"] = "100\n"
		}
	} else {
		for f, c := range files {
			delete(files, f)
			files[dir+"/"+f] = c
		}
	}
	for f, c := range files {
		if err := r.Host.WriteFile(filepath.Join("cgroup", f), c); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rig) addPod(pod *corev1.Pod, files bool) string {
	r.t.Helper()
	r.AddPod(pod, hostsim.Usage{})
	dir := r.Host.Layout().PodDir(pod)
	if files {
		r.blkioFiles(dir, true)
	}
	return dir
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) error {
	r.t.Helper()
	return r.p.Run(r.Ctx, spec)
}

// writes are the executor's audit records from index from on, as "dir resource value result".
func (r *rig) writes(from int) []string {
	var out []string
	for _, rec := range r.Exec.Audit()[from:] {
		out = append(out, fmt.Sprintf("%s %s %s %s", rec.Dir, rec.Resource, rec.Value, rec.Result))
	}
	slices.Sort(out)
	return out
}

// expect lists "dir resource value written" for every dir and value, sorted.
func expect(dirs []string, values ...executor.Value) []string {
	var out []string
	for _, d := range dirs {
		for _, v := range values {
			out = append(out, fmt.Sprintf("%s %s %s written", d, v.Resource(), v))
		}
	}
	slices.Sort(out)
	return out
}

type block struct {
	name string
	typ  slov1alpha1.BlockType
	cfg  slov1alpha1.IOCfg
}

func dev(name string, cfg slov1alpha1.IOCfg) block { return block{name, slov1alpha1.BlockDevice, cfg} }

func on(blocks ...block) *slov1alpha1.NodeSLOSpec {
	s := (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults()
	c := s.ResourceQOSStrategy.BEClass.BlkIOQOS
	c.Enable = ptr.To(true)
	for _, b := range blocks {
		c.Blocks = append(c.Blocks, slov1alpha1.BlockCfg{Name: b.name, Type: b.typ, IOCfg: b.cfg})
	}
	return s
}

func off() *slov1alpha1.NodeSLOSpec { return (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults() }

func i64(v int64) *int64 { return &v }

// Pods: a best-effort pod in the besteffort QoS cgroup, a best-effort pod that requests CPU (so it lives in the
// burstable one), a best-effort pod not running yet, and a service.
func bePod() *corev1.Pod {
	return tu.Pod("batch").UID("batch-uid").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Running("containerd://b").Obj()
}

func beBurstable() *corev1.Pod {
	return tu.Pod("batch-cpu").UID("batch-cpu-uid").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Requests("cpu", "100m").Running("containerd://bc").Obj()
}

func bePending() *corev1.Pod {
	return tu.Pod("batch-new").UID("batch-new-uid").Label(slov1alpha1.LabelQoSClass, "BE").Phase(corev1.PodPending).Container("c").Obj()
}

func service() *corev1.Pod {
	return tu.Pod("web").UID("web-uid").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LS").Container("c").Requests("cpu", "1").Running("containerd://w").Obj()
}

// step runs spec and compares the writes of the run with want (nil: none).
func (r *rig) step(what string, spec *slov1alpha1.NodeSLOSpec, want []string) {
	r.t.Helper()
	n := len(r.Exec.Audit())
	if err := r.run(spec); err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
	slices.Sort(want)
	if d := cmp.Diff(want, r.writes(n)); d != "" {
		r.t.Errorf("%s: writes (-want +got):\n%s", what, d)
	}
}

// TestCapsFollowTheConfiguration runs the plugin on every cgroup shape through a configuration, a device dropped
// from it, the weight dropped, and the strategy turned off: the besteffort cgroup and running best-effort pods get
// the caps (nothing else does), a second run writes nothing, what is dropped is written back to no cap / the
// default weight, and off leaves nothing capped and nothing held.
func TestCapsFollowTheConfiguration(t *testing.T) {
	for _, shape := range []struct {
		v cgroup.Version
		d cgroup.Driver
	}{{cgroup.V1, cgroup.Cgroupfs}, {cgroup.V1, cgroup.Systemd}, {cgroup.V2, cgroup.Cgroupfs}, {cgroup.V2, cgroup.Systemd}} {
		t.Run(shape.v.String()+"-"+string(shape.d), func(t *testing.T) { capsFollowTheConfiguration(t, shape.v, shape.d) })
	}
}

func capsFollowTheConfiguration(t *testing.T, v cgroup.Version, driver cgroup.Driver) {
	r := newRig(t, v, driver)
	qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
	r.blkioFiles(qos, true)
	dirs := []string{qos, r.addPod(bePod(), true), r.addPod(beBurstable(), true)}
	r.addPod(bePending(), true)
	web := r.addPod(service(), true)

	spec := on(
		dev("/dev/vda", slov1alpha1.IOCfg{ReadBPS: i64(10 * mi), WriteIOPS: i64(200), IOWeightPercent: i64(50)}),
		dev("loop0", slov1alpha1.IOCfg{WriteBPS: i64(4 * mi), IOWeightPercent: i64(50)}),
	)
	if err := r.p.Validate(spec); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	vdaCap := executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{ReadBPS: 10 * mi, WriteIOPS: 200}}
	loopCap := executor.IOLimit{Device: loop0, Limit: cgroup.IOLimit{WriteBPS: 4 * mi}}
	r.step("first run", spec, expect(dirs, vdaCap, loopCap, executor.IOWeight(50)))
	for _, dir := range dirs {
		if w, err := r.FS.IOWeight(dir); err != nil || w != 50 {
			t.Errorf("weight of %s = %d, %v; want 50", dir, w, err)
		}
	}
	if w, _ := r.FS.IOWeight(web); w != 100 {
		t.Errorf("the service's weight was changed to %d", w)
	}
	// The fixture's io.max keeps the last line written (the kernel keeps one per device).
	if l, _ := r.FS.IOLimits(qos); v == cgroup.V2 && l[loop0] != loopCap.Limit {
		t.Errorf("io.max of %s = %v, want %v for 7:0", qos, l, loopCap.Limit)
	}
	r.step("second run", spec, nil)

	// loop0 dropped: its caps go back to none in every cgroup; vda's are handed over again.
	spec = on(dev("vda", slov1alpha1.IOCfg{ReadBPS: i64(10 * mi), WriteIOPS: i64(200), IOWeightPercent: i64(50)}))
	r.step("loop0 dropped", spec, append(expect(dirs, executor.IOLimit{Device: loop0}), expect(dirs, vdaCap, executor.IOWeight(50))...))

	// The weight dropped: back to 100.
	spec = on(dev("vda", slov1alpha1.IOCfg{ReadBPS: i64(10 * mi), WriteIOPS: i64(200)}))
	r.step("weight dropped", spec, append(expect(dirs, executor.IOWeight(100)), expect(dirs, vdaCap)...))

	// Off: every cap goes, and the executor holds nothing of the plugin's (a resync writes nothing).
	r.step("off", off(), expect(dirs, executor.IOLimit{Device: vda}))
	for _, dir := range dirs {
		// The fixture's files keep the "no cap" line written; the kernel drops it.
		if l, err := r.FS.IOLimits(dir); err != nil || l[vda] != (cgroup.IOLimit{}) {
			t.Errorf("caps of %s after off: %v, %v", dir, l, err)
		}
	}
	if err := r.Exec.Resync(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.step("a resync and another run after off: the values were released", off(), nil)
}

// TestHostApplications: a BE host application's cgroup gets the class's caps and weight like a best-effort pod, an
// LS one nothing; moved to LS, its caps and weight are written back.
func TestHostApplications(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Systemd)
	qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
	r.blkioFiles(qos, true)
	apps := []slov1alpha1.HostApplicationSpec{
		{Name: "backup", QoS: slov1alpha1.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{ParentDir: "daemons"}},
		{Name: "nginx", QoS: slov1alpha1.QoSLS},
	}
	dirs := map[string]string{}
	for _, app := range apps {
		base, parent, rel := app.CgroupLocation()
		dirs[app.Name] = r.Host.Layout().HostDir(cgroup.HostBase(base), parent, rel)
		r.blkioFiles(dirs[app.Name], true)
	}
	withApps := func() *slov1alpha1.NodeSLOSpec {
		s := on(dev("vda", slov1alpha1.IOCfg{WriteBPS: i64(8 * mi), IOWeightPercent: i64(50)}))
		s.HostApplications = apps
		return s
	}
	vdaCap := executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{WriteBPS: 8 * mi}}
	r.step("BE application capped", withApps(), expect([]string{qos, dirs["backup"]}, vdaCap, executor.IOWeight(50)))
	apps[0].QoS = slov1alpha1.QoSLS
	r.step("moved to LS", withApps(), expect([]string{dirs["backup"]}, executor.IOLimit{Device: vda}, executor.IOWeight(100)))
}

// TestOffClearsWhatAnEarlierAgentLeft: a freshly started agent with the strategy off removes caps and weights left
// on best-effort cgroups (by an agent before it), once, and leaves the service's alone.
func TestOffClearsWhatAnEarlierAgentLeft(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Systemd)
	qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
	r.blkioFiles(qos, true)
	be := r.addPod(bePod(), true)
	web := r.addPod(service(), true)
	for _, dir := range []string{be, web} {
		if err := r.FS.SetIOLimit(dir, vdb, cgroup.IOLimit{WriteBPS: mi}); err != nil {
			t.Fatal(err)
		}
		if err := r.FS.SetIOWeight(dir, 30); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.run(off()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(expect([]string{be}, executor.IOLimit{Device: vdb}, executor.IOWeight(100)), r.writes(0)); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
	if l, _ := r.FS.IOLimits(web); l[vdb].WriteBPS != mi {
		t.Errorf("the service's caps were touched: %v", l)
	}
	n := len(r.Exec.Audit())
	if err := r.run(off()); err != nil {
		t.Fatal(err)
	}
	if got := r.writes(n); len(got) > 0 {
		t.Errorf("a second run while off wrote %v", got)
	}
}

// TestKernelLacksTheFiles: where the kernel lacks the files (no blkio files on v1, the io controller not enabled
// on v2) the plugin says so once and writes nothing; where only the weight file is missing (v1 without BFQ), the
// caps are still written.
func TestKernelLacksTheFiles(t *testing.T) {
	spec := on(dev("vda", slov1alpha1.IOCfg{WriteBPS: i64(mi), IOWeightPercent: i64(10)}))
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String()+"-none", func(t *testing.T) {
			r := newRig(t, v, cgroup.Cgroupfs)
			r.addPod(bePod(), false)
			for range 3 {
				if err := r.run(spec); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.writes(0); len(got) > 0 {
				t.Errorf("wrote %v on a kernel without the files", got)
			}
			if n := r.Log.Count("this kernel lacks the block I/O throttle files"); n != 1 {
				t.Errorf("said %d times that the throttle files are missing, want once:\n%s", n, r.Log)
			}
			if n := r.Log.Count("this kernel lacks the I/O weight file"); n != 1 {
				t.Errorf("said %d times that the weight file is missing, want once:\n%s", n, r.Log)
			}
			if err := r.run(off()); err != nil {
				t.Errorf("turning off on a kernel without the files: %v", err)
			}
		})
	}
	t.Run("v1-no-bfq", func(t *testing.T) {
		r := newRig(t, cgroup.V1, cgroup.Systemd)
		qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
		r.blkioFiles(qos, false)
		for range 2 {
			if err := r.run(spec); err != nil {
				t.Fatal(err)
			}
		}
		if d := cmp.Diff(expect([]string{qos}, executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{WriteBPS: mi}}), r.writes(0)); d != "" {
			t.Errorf("writes (-want +got):\n%s", d)
		}
		if n := r.Log.Count("this kernel lacks the I/O weight file"); n != 1 {
			t.Errorf("said %d times that the weight file is missing, want once:\n%s", n, r.Log)
		}
	})
}

// TestDeviceGoneAfterValidate: a device that disappears after the spec was accepted is reported by Run; the other
// devices are still capped.
func TestDeviceGoneAfterValidate(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs)
	qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
	r.blkioFiles(qos, true)
	spec := on(dev("vda", slov1alpha1.IOCfg{ReadIOPS: i64(100)}), dev("loop1", slov1alpha1.IOCfg{ReadIOPS: i64(100)}))
	err := r.run(spec)
	if err == nil || !strings.Contains(err.Error(), `blocks[1] (device "loop1"): no block device loop1`) {
		t.Errorf("Run error %v, want loop1 named", err)
	}
	if d := cmp.Diff(expect([]string{qos}, executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{ReadIOPS: 100}}), r.writes(0)); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
}

func TestValidate(t *testing.T) {
	r := newRig(t, cgroup.V1, cgroup.Cgroupfs)
	f := field + ".blocks"
	tests := []struct {
		name    string
		spec    *slov1alpha1.NodeSLOSpec
		wantErr []string // substrings; none means accepted
	}{
		{name: "off, whatever the values", spec: func() *slov1alpha1.NodeSLOSpec {
			s := on(dev("nope", slov1alpha1.IOCfg{ReadBPS: i64(-1)}))
			s.ResourceQOSStrategy.BEClass.BlkIOQOS.Enable = ptr.To(false)
			return s
		}()},
		{name: "on without blocks", spec: on()},
		{name: "disks by every spelling, a volume group", spec: on(
			dev("/dev/vda", slov1alpha1.IOCfg{ReadBPS: i64(0), IOWeightPercent: i64(1)}),
			dev("loop0", slov1alpha1.IOCfg{WriteIOPS: i64(1 << 40), IOWeightPercent: i64(1)}),
			dev("/dev/mapper/vg0--x-data", slov1alpha1.IOCfg{}),
		)},
		{name: "a volume group", spec: on(block{"vg0", slov1alpha1.BlockVolumeGroup, slov1alpha1.IOCfg{IOWeightPercent: i64(100)}})},
		{name: "unknown device", spec: on(dev("/dev/sdz", slov1alpha1.IOCfg{})),
			wantErr: []string{`resourceQOSStrategy.beClass.blkioQOS.blocks[0] (device "/dev/sdz"): no block device sdz in `}},
		{name: "a partition", spec: on(dev("/dev/vda1", slov1alpha1.IOCfg{})),
			wantErr: []string{f + `[0] (device "/dev/vda1"): vda1 is a partition of vda; the kernel caps whole disks only: name vda`}},
		{name: "not a device name", spec: on(dev("/dev/disk/by-id/x", slov1alpha1.IOCfg{}), dev("", slov1alpha1.IOCfg{}), dev("/dev/mapper/nope", slov1alpha1.IOCfg{})),
			wantErr: []string{`"/dev/disk/by-id/x" is not a block device name`, f + `[1] (device ""): "" is not a block device name`, `no device-mapper device named "nope"`}},
		{name: "negative values", spec: on(dev("vda", slov1alpha1.IOCfg{ReadBPS: i64(-1), WriteBPS: i64(-2), ReadIOPS: i64(-3), WriteIOPS: i64(-4)})),
			wantErr: []string{f + "[0].ioCfg.readBPS is -1, below 0", "writeBPS is -2", "readIOPS is -3", "writeIOPS is -4"}},
		{name: "weight out of range", spec: on(dev("vda", slov1alpha1.IOCfg{IOWeightPercent: i64(0)}), dev("vdb", slov1alpha1.IOCfg{IOWeightPercent: i64(101)})),
			wantErr: []string{f + "[0].ioCfg.ioWeightPercent is 0, outside [1, 100]", f + "[1].ioCfg.ioWeightPercent is 101, outside [1, 100]"}},
		{name: "two weights", spec: on(dev("vda", slov1alpha1.IOCfg{IOWeightPercent: i64(20)}), dev("vdb", slov1alpha1.IOCfg{IOWeightPercent: i64(30)})),
			wantErr: []string{f + "[1].ioCfg.ioWeightPercent is 30 but blocks[0] sets 20: the weight is one per cgroup"}},
		{name: "one disk twice", spec: on(dev("vda", slov1alpha1.IOCfg{}), block{"vg0", slov1alpha1.BlockVolumeGroup, slov1alpha1.IOCfg{}}),
			wantErr: []string{f + `[1] ("vg0") and ` + f + "[0] both cap device 253:0"}},
		{name: "unknown volume group", spec: on(block{"vg1", slov1alpha1.BlockVolumeGroup, slov1alpha1.IOCfg{}}, block{"crypt", slov1alpha1.BlockVolumeGroup, slov1alpha1.IOCfg{}}),
			wantErr: []string{`[0] (volumegroup "vg1"): no active logical volume of volume group "vg1"`, `[1] (volumegroup "crypt"): no active logical volume`}},
		{name: "pod volumes and unknown types", spec: on(block{"data", slov1alpha1.BlockPodVolume, slov1alpha1.IOCfg{}}, block{"vda", "disk", slov1alpha1.IOCfg{}}),
			wantErr: []string{`[0] (podvolume "data"): type "podvolume" is not supported: finding a pod volume's device needs its CSI driver's mount`, `[1] (disk "vda"): type "disk" is not one of "device", "volumegroup"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.p.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, false, tt.wantErr...)
		})
	}
}

func TestResolve(t *testing.T) {
	r := newRig(t, cgroup.V1, cgroup.Cgroupfs)
	tests := []struct {
		b    slov1alpha1.BlockCfg
		want []cgroup.Device
	}{
		{slov1alpha1.BlockCfg{Name: "/dev/vdb", Type: slov1alpha1.BlockDevice}, []cgroup.Device{vdb}},
		{slov1alpha1.BlockCfg{Name: "/dev/mapper/vg0-data", Type: slov1alpha1.BlockDevice}, []cgroup.Device{{Major: 252, Minor: 0}}},
		// vg0: data on vda2 (a partition of vda), my-lv on a dm-crypt device on vdb; vg0-x's volume on vdb is not
		// in it.
		{slov1alpha1.BlockCfg{Name: "vg0", Type: slov1alpha1.BlockVolumeGroup}, []cgroup.Device{vda, vdb}},
		{slov1alpha1.BlockCfg{Name: "vg0-x", Type: slov1alpha1.BlockVolumeGroup}, []cgroup.Device{vdb}},
	}
	for _, tt := range tests {
		got, err := resolve(r.p.sysRoot, tt.b)
		if err != nil {
			t.Errorf("%s %q: %v", tt.b.Type, tt.b.Name, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s %q (-want +got):\n%s", tt.b.Type, tt.b.Name, d)
		}
	}
}
