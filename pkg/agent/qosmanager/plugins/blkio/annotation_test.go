package blkio

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// describe is pl as sorted "maj:min rbps=.. wbps=.. riops=.. wiops=.." lines and "weight N" (none: left alone).
func describe(pl plan) []string {
	var out []string
	for _, dc := range pl.caps {
		out = append(out, executor.IOLimit{Device: dc.dev, Limit: dc.limit}.String())
	}
	slices.Sort(out)
	if pl.weight > 0 {
		out = append(out, fmt.Sprintf("weight %d", pl.weight))
	}
	return out
}

// TestPodPlan: a pod's annotation (gleaner.sh's over Koordinator's) only narrows the block I/O its class gives it;
// anything that does not parse, names a device the node lacks, or would widen the class's is an error, and the
// class's plan applies unchanged.
func TestPodPlan(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs)
	class, err := r.p.plan(&on(dev("vda", slov1alpha1.IOCfg{ReadBPS: i64(10 * mi), WriteIOPS: i64(200), IOWeightPercent: i64(50)})).
		ResourceQOSStrategy.BEClass.BlkIOQOS.BlkIOQOS)
	if err != nil {
		t.Fatal(err)
	}
	classIs := []string{"253:0 rbps=10485760 wbps=max riops=max wiops=200", "weight 50"}
	const g, k = slov1alpha1.AnnotationBlkIOQOS, slov1alpha1.AnnotationBlkIOQOSAlias
	tests := []struct {
		name        string
		annotations map[string]string
		class       plan
		want        []string
		wantPartly  string // a part of what is left out; "": nothing is
		wantErr     string
	}{
		{name: "no annotation", class: class, want: classIs},
		{name: "a lower read cap, the class's other caps kept", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"/dev/vda","type":"device","ioCfg":{"readBPS":1048576}}]}`},
			want:        []string{"253:0 rbps=1048576 wbps=max riops=max wiops=200", "weight 50"}},
		{name: "Koordinator's, with its own test's spelling iocfg: a cap on a disk the class leaves alone", class: class,
			annotations: map[string]string{k: `{"blocks":[{"name":"vdb","type":"device","iocfg":{"readIOPS":1024,"writeIOPS":512}}]}`},
			want:        []string{classIs[0], "253:16 rbps=max wbps=max riops=1024 wiops=512", classIs[1]}},
		{name: "gleaner.sh's wins over Koordinator's", class: class,
			annotations: map[string]string{
				g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"writeIOPS":100}}]}`,
				k: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":99999999}}]}`,
			},
			want: []string{"253:0 rbps=10485760 wbps=max riops=max wiops=100", "weight 50"}},
		{name: "a lower weight alone", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vdb","type":"device","ioCfg":{"ioWeightPercent":10}}]}`},
			want:        []string{classIs[0], "weight 10"}},
		{name: "a volume group: each of its disks", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vg0","type":"volumegroup","ioCfg":{"writeBPS":4096}}]}`},
			want:        []string{"253:0 rbps=10485760 wbps=4096 riops=max wiops=200", "253:16 rbps=max wbps=4096 riops=max wiops=max", "weight 50"}},
		{name: "a class without caps: any cap, a weight up to 100", class: plan{},
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":0,"writeBPS":2048,"ioWeightPercent":100}}]}`},
			want:        []string{"253:0 rbps=max wbps=2048 riops=max wiops=max", "weight 100"}},
		{name: "an empty list: the class's", class: class, annotations: map[string]string{g: `{"blocks":[]}`}, want: classIs},

		{name: "a raised cap", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":20971520,"writeIOPS":100}}]}`},
			want:        classIs, wantErr: "blocks[0].ioCfg.readBPS 20971520 on device 253:0 is not in 1..10485760 (the class's cap; a pod may only lower it)"},
		{name: "a cap removed (0 is no cap)", class: class,
			annotations: map[string]string{k: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"writeIOPS":0}}]}`},
			want:        classIs, wantErr: "writeIOPS 0 on device 253:0 is not in 1..200"},
		{name: "a raised weight", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"ioWeightPercent":80}}]}`},
			want:        classIs, wantErr: "ioWeightPercent 80 is above the class's 50"},
		{name: "a weight above the default where the class sets none", class: plan{},
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"ioWeightPercent":101}}]}`},
			wantErr:     "blocks[0].ioCfg.ioWeightPercent is 101, outside [1, 100]"},
		{name: "an unknown device", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"/dev/sdz","type":"device","ioCfg":{"readBPS":1}}]}`},
			want:        classIs, wantErr: `blocks[0] (device "/dev/sdz"): no block device sdz`},
		{name: "a pod volume", class: class,
			annotations: map[string]string{k: `{"blocks":[{"name":"html","type":"podvolume","ioCfg":{"readIOPS":1024}}]}`},
			want:        classIs, wantErr: `blocks[0] (podvolume "html"): type "podvolume" is not supported`},
		{name: "one disk twice", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{}},{"name":"vg0","type":"volumegroup","ioCfg":{}}]}`},
			want:        classIs, wantErr: `blocks[1] ("vg0") and blocks[0] both cap device 253:0`},
		{name: "a negative value", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":-1}}]}`},
			want:        classIs, wantErr: "blocks[0].ioCfg.readBPS is -1, below 0"},
		{name: "not JSON", class: class, annotations: map[string]string{g: `blocks: vda`},
			want: classIs, wantErr: `annotation gleaner.sh/blkio-qos="blocks: vda" is not a block I/O QoS configuration`},
		{name: "empty", class: class, annotations: map[string]string{g: ``},
			want: classIs, wantErr: `annotation gleaner.sh/blkio-qos="" is not a block I/O QoS configuration`},
		{name: "Koordinator's empty: nothing asked, as in Koordinator", class: class, annotations: map[string]string{k: ``}, want: classIs},
		{name: "an unknown field in Gleaner's", class: class,
			annotations: map[string]string{g: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readLatency":3000}}]}`},
			want:        classIs, wantErr: `unknown field "readLatency"`},
		{name: "Koordinator's iocost fields: left out, named", class: class,
			annotations: map[string]string{k: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":4096,"readLatency":3000,"enableUserModel":true}}]}`},
			want:        []string{"253:0 rbps=4096 wbps=max riops=max wiops=200", "weight 50"},
			wantPartly:  "annotation koordinator.sh/blkioQOS: Gleaner does not read blocks[0].ioCfg.enableUserModel, blocks[0].ioCfg.readLatency, ignored"},
		{name: "something after the object", class: class, annotations: map[string]string{g: `{"blocks":[]} {}`},
			want: classIs, wantErr: "more follows the JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tu.Pod("p").Obj()
			pod.Annotations = tt.annotations
			got, partly, err := r.p.podPlan(pod, tt.class)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if (partly == "") != (tt.wantPartly == "") || !strings.Contains(partly, tt.wantPartly) {
				t.Errorf("left out %q, want %q", partly, tt.wantPartly)
			}
			if d := cmp.Diff(tt.want, describe(got)); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
	if d := cmp.Diff(classIs, describe(class)); d != "" {
		t.Errorf("the class's plan was changed in place (-want +got):\n%s", d)
	}
}

// events are the events recorded since the last call.
func (r *rig) events() []string {
	var out []string
	for {
		select {
		case e := <-r.Events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestRunWithPodAnnotations runs the plugin on cgroup v1 and v2 with pods that narrow their caps by annotation:
// a best-effort pod lowers its class's read cap and weight, a service caps a disk for itself (its class has no
// caps), a best-effort pod that asks for more than its class gets the class's, and a service with a malformed
// annotation gets nothing; each bad value is one Warning event however many runs see it. An annotation removed
// gives back what it added, and with the class's strategy off the services' own caps stay.
func TestRunWithPodAnnotations(t *testing.T) {
	for _, shape := range []struct {
		v cgroup.Version
		d cgroup.Driver
	}{{cgroup.V1, cgroup.Cgroupfs}, {cgroup.V2, cgroup.Systemd}} {
		t.Run(shape.v.String()+"-"+string(shape.d), func(t *testing.T) { runWithPodAnnotations(t, shape.v, shape.d) })
	}
}

func runWithPodAnnotations(t *testing.T, v cgroup.Version, driver cgroup.Driver) {
	r := newRig(t, v, driver)
	qos := r.Host.Layout().QoSDir(corev1.PodQOSBestEffort)
	r.blkioFiles(qos, true)
	lower := bePod()
	lower.Annotations = map[string]string{slov1alpha1.AnnotationBlkIOQOS: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":1048576,"ioWeightPercent":20}},` +
		`{"name":"vdb","type":"device","ioCfg":{"writeIOPS":50}}]}`}
	greedy := beBurstable()
	greedy.Annotations = map[string]string{slov1alpha1.AnnotationBlkIOQOSAlias: `{"blocks":[{"name":"vda","type":"device","ioCfg":{"readBPS":0}}]}`}
	own := service()
	ownAnnotation := map[string]string{slov1alpha1.AnnotationBlkIOQOSAlias: `{"blocks":[{"name":"/dev/vdb","type":"device","ioCfg":{"writeBPS":1048576}}]}`}
	own.Annotations = ownAnnotation
	broken := tu.Pod("web-2").UID("web-2-uid").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LS").
		Annotation(slov1alpha1.AnnotationBlkIOQOS, `{"blocks":[{"name":"vdb"`).Container("c").Requests("cpu", "1").Running("containerd://w2").Obj()
	lowerDir, greedyDir, ownDir, brokenDir := r.addPod(lower, true), r.addPod(greedy, true), r.addPod(own, true), r.addPod(broken, true)

	spec := on(dev("vda", slov1alpha1.IOCfg{ReadBPS: i64(10 * mi), WriteIOPS: i64(200), IOWeightPercent: i64(50)}))
	classCap := executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{ReadBPS: 10 * mi, WriteIOPS: 200}}
	lowerCap := executor.IOLimit{Device: vda, Limit: cgroup.IOLimit{ReadBPS: mi, WriteIOPS: 200}}
	lowerVDB := executor.IOLimit{Device: vdb, Limit: cgroup.IOLimit{WriteIOPS: 50}}
	ownCap := executor.IOLimit{Device: vdb, Limit: cgroup.IOLimit{WriteBPS: mi}}
	first := append(expect([]string{qos, greedyDir}, classCap, executor.IOWeight(50)), expect([]string{lowerDir}, lowerCap, lowerVDB, executor.IOWeight(20))...)
	r.step("first run", spec, append(first, expect([]string{ownDir}, ownCap)...))
	r.step("second run", spec, nil)
	if l, err := r.FS.IOLimits(ownDir); err != nil || l[vdb] != ownCap.Limit {
		t.Errorf("caps of the service %s: %v, %v; want %v on vdb", ownDir, l, err, ownCap.Limit)
	}
	if l, err := r.FS.IOLimits(brokenDir); err != nil || len(l) > 0 {
		t.Errorf("caps of the service with a broken annotation: %v, %v; want none", l, err)
	}
	if w, err := r.FS.IOWeight(lowerDir); err != nil || w != 20 {
		t.Errorf("weight of the pod that lowered it: %d, %v; want 20", w, err)
	}
	events := r.events()
	slices.Sort(events)
	want := []string{
		`Warning InvalidBlkIOQOSAnnotation annotation gleaner.sh/blkio-qos="{\"blocks\":[{\"name\":\"vdb\"" is not a block I/O QoS configuration: unexpected EOF; its class LS's block I/O QoS applies`,
		`Warning InvalidBlkIOQOSAnnotation annotation koordinator.sh/blkioQOS="{\"blocks\":[{\"name\":\"vda\",\"type\":\"device\",\"ioCfg\":{\"readBPS\":0}}]}": blocks[0].ioCfg.readBPS 0 on device 253:0 is not in 1..10485760 (the class's cap; a pod may only lower it); its class BE's block I/O QoS applies`,
	}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}

	// The annotations removed: the service's own cap goes, the best-effort pod's cap on vdb goes and it gets its
	// class's cap and weight.
	for _, p := range []*corev1.Pod{lower, own} {
		p.Annotations = nil
		r.Store.SetPod(p)
	}
	r.step("annotations removed", spec, append(expect([]string{ownDir}, executor.IOLimit{Device: vdb}), expect([]string{lowerDir}, executor.IOLimit{Device: vdb}, classCap, executor.IOWeight(50))...))

	// The class's strategy off: the best-effort caps go, a service's own cap still applies.
	own.Annotations = ownAnnotation
	r.Store.SetPod(own)
	r.step("off, with a service's own cap", off(), append(expect([]string{qos, lowerDir, greedyDir}, executor.IOLimit{Device: vda}, executor.IOWeight(100)),
		expect([]string{ownDir}, ownCap)...))
	r.step("off again", off(), nil)
	if got := r.events(); len(got) > 0 {
		t.Errorf("more events after the first run: %q", got)
	}
}
