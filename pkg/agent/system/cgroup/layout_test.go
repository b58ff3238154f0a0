package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/test/ci"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const (
	burstableUID  = "6c8e3c0f-8b4c-4d5e-9a77-1f2e3d4c5b6a"
	guaranteedUID = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
)

// fixtures are the trees under testdata/, with what they hold.
var fixtures = []struct {
	name        string
	version     Version
	driver      Driver
	containerID string
}{
	{"v1-cgroupfs", V1, Cgroupfs, "containerd://3b1f0c2d9e8a"},
	{"v1-systemd", V1, Systemd, "cri-o://a1b2c3d4e5f6"},
	{"v2-systemd", V2, Systemd, "containerd://3b1f0c2d9e8a"},
	{"v2-cgroupfs", V2, Cgroupfs, "docker://9f8e7d6c5b4a"},
}

func burstablePod() *corev1.Pod {
	return testutil.Pod("web").UID(burstableUID).Container("c").Requests("cpu", "250m").Limits("cpu", "500m").Obj()
}

func guaranteedPod() *corev1.Pod {
	return testutil.Pod("db").UID(guaranteedUID).Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj()
}

func TestDetectVersionAndDriver(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := filepath.Join("testdata", f.name)
			v, err := DetectVersion(root)
			if err != nil || v != f.version {
				t.Fatalf("DetectVersion = %v, %v; want %v", v, err, f.version)
			}
			d, err := DetectDriver(root, v, "")
			if err != nil || d != f.driver {
				t.Fatalf("DetectDriver = %q, %v; want %q", d, err, f.driver)
			}
		})
	}
	empty := t.TempDir()
	if _, err := DetectVersion(empty); err == nil || !strings.Contains(err.Error(), "neither a cgroup2 mount") {
		t.Errorf("DetectVersion(empty dir) = %v, want a clear error", err)
	}
	if _, err := DetectVersion(filepath.Join(empty, "missing")); err == nil || !strings.Contains(err.Error(), "statfs") {
		t.Errorf("DetectVersion(missing dir) = %v, want a statfs error", err)
	}
	if _, err := DetectDriver("testdata/v1-cgroupfs", V1, "elsewhere"); err == nil || !strings.Contains(err.Error(), `--cgroup-root "/elsewhere"`) {
		t.Errorf("DetectDriver(wrong parent) = %v, want an error naming the cgroup root", err)
	}
}

// TestDetectVersionThisMachine checks the statfs path on the real mount: the magic of a cgroup2 mount, or a v1
// (tmpfs) root holding the subsystem directories.
func TestDetectVersionThisMachine(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		ci.Skipf(t, "no /sys/fs/cgroup here: %v", err)
	}
	v, err := DetectVersion("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	if want := map[bool]Version{true: V2, false: V1}[statErr == nil]; v != want {
		t.Fatalf("DetectVersion(/sys/fs/cgroup) = %v, want %v", v, want)
	}
}

func TestLayout(t *testing.T) {
	const uid = "6c8e3c0f-8b4c-4d5e-9a77-1f2e3d4c5b6a"
	const sysUID = "6c8e3c0f_8b4c_4d5e_9a77_1f2e3d4c5b6a"
	be := testutil.Pod("be").UID(uid).Container("c").Obj()
	tests := []struct {
		name   string
		layout Layout
		pod    *corev1.Pod
		ctrID  string
		want   []string // kubepods, pod dir, container dir
	}{
		{
			name: "cgroupfs burstable containerd", layout: Layout{Driver: Cgroupfs}, pod: burstablePod(), ctrID: "containerd://abc",
			want: []string{"kubepods", "kubepods/burstable/pod" + uid, "kubepods/burstable/pod" + uid + "/abc"},
		},
		{
			name: "cgroupfs guaranteed cri-o under a cgroup root", layout: Layout{Driver: Cgroupfs, Parent: "test-root"}, pod: guaranteedPod(), ctrID: "cri-o://abc",
			want: []string{"test-root/kubepods", "test-root/kubepods/pod" + guaranteedUID, "test-root/kubepods/pod" + guaranteedUID + "/crio-abc"},
		},
		{
			name: "cgroupfs besteffort docker", layout: Layout{Driver: Cgroupfs}, pod: be, ctrID: "docker://abc",
			want: []string{"kubepods", "kubepods/besteffort/pod" + uid, "kubepods/besteffort/pod" + uid + "/abc"},
		},
		{
			name: "systemd burstable containerd", layout: Layout{Driver: Systemd}, pod: burstablePod(), ctrID: "containerd://abc",
			want: []string{
				"kubepods.slice",
				"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sysUID + ".slice",
				"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sysUID + ".slice/cri-containerd-abc.scope",
			},
		},
		{
			name: "systemd besteffort cri-o", layout: Layout{Driver: Systemd}, pod: be, ctrID: "cri-o://abc",
			want: []string{
				"kubepods.slice",
				"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + sysUID + ".slice",
				"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + sysUID + ".slice/crio-abc.scope",
			},
		},
		{
			// The API server's mirror of a static pod has a UID of its own; the kubelet named the cgroup after the
			// static pod's, which the mirror carries in an annotation.
			name: "cgroupfs mirror pod of a static pod", layout: Layout{Driver: Cgroupfs},
			pod:   testutil.Pod("etcd").UID("mirror-uid").Annotation("kubernetes.io/config.mirror", uid).Container("c").Obj(),
			ctrID: "containerd://abc",
			want:  []string{"kubepods", "kubepods/besteffort/pod" + uid, "kubepods/besteffort/pod" + uid + "/abc"},
		},
		{
			name: "systemd guaranteed docker", layout: Layout{Driver: Systemd}, pod: testutil.Pod("g").UID(uid).Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj(), ctrID: "docker://abc",
			want: []string{"kubepods.slice", "kubepods.slice/kubepods-pod" + sysUID + ".slice", "kubepods.slice/kubepods-pod" + sysUID + ".slice/docker-abc.scope"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.layout.PodDir(tt.pod)
			ctr, err := tt.layout.ContainerDir(pod, tt.ctrID)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{tt.layout.Kubepods(), pod, ctr}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("path %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	for _, bad := range []string{"", "abc", "containerd://", "rkt://abc"} {
		if _, err := (Layout{Driver: Cgroupfs}).ContainerDir("kubepods", bad); err == nil {
			t.Errorf("ContainerDir(%q): want an error", bad)
		}
	}
}

// TestLayoutMatchesFixtures checks that the directories Layout formats are the ones the fixture trees hold,
// which were written after real kubelets' trees.
func TestLayoutMatchesFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			l := Layout{Driver: f.driver}
			fs := NewFS(filepath.Join("testdata", f.name), f.version)
			pod := l.PodDir(burstablePod())
			ctr, err := l.ContainerDir(pod, f.containerID)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{l.Kubepods(), l.QoSDir(corev1.PodQOSBurstable), l.QoSDir(corev1.PodQOSBestEffort), pod, ctr, l.PodDir(guaranteedPod())} {
				if _, err := os.Stat(fs.Dir("cpu", dir)); err != nil {
					t.Errorf("Layout gives %q, not in the fixture: %v", dir, err)
				}
			}
		})
	}
}

func TestHostDir(t *testing.T) {
	tests := []struct {
		name             string
		layout           Layout
		base             HostBase
		parent, relative string
		want             string
	}{
		{name: "root", layout: Layout{Driver: Cgroupfs}, base: HostBaseRoot, parent: "host-latency-sensitive", relative: "nginx", want: "host-latency-sensitive/nginx"},
		{name: "empty base is the root, under a parent", layout: Layout{Driver: Cgroupfs, Parent: "root"}, parent: "host-best-effort", relative: "spark", want: "root/host-best-effort/spark"},
		{name: "trailing slashes", layout: Layout{Driver: Systemd}, base: HostBaseRoot, parent: "host-latency-sensitive/", relative: "nginx/", want: "host-latency-sensitive/nginx"},
		{name: "besteffort base, systemd", layout: Layout{Driver: Systemd}, base: HostBaseBestEffort, parent: "apps", relative: "x", want: "kubepods.slice/kubepods-besteffort.slice/apps/x"},
		{name: "burstable base, cgroupfs", layout: Layout{Driver: Cgroupfs}, base: HostBaseBurstable, parent: "apps", relative: "x", want: "kubepods/burstable/apps/x"},
		{name: "kubepods base, cgroupfs", layout: Layout{Driver: Cgroupfs}, base: HostBaseKubepods, parent: "apps", relative: "x", want: "kubepods/apps/x"},
		{name: "dot-dot stays under the hierarchy root", layout: Layout{Driver: Cgroupfs}, parent: "../../..", relative: "etc", want: "etc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.layout.HostDir(tt.base, tt.parent, tt.relative); got != tt.want {
				t.Errorf("HostDir = %q, want %q", got, tt.want)
			}
		})
	}
}
