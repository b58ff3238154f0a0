package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The kubelet's rules, as it applies them on cgroup v1 (written out here; the product never imports the
// kubelet): cpu.shares = request millicores * 1024 / 1000, at least 2; cfs_quota_us = limit millicores * period /
// 1000 with a period of 100000us, at least 1000, or -1 without a limit; memory.limit_in_bytes = the memory limit,
// or unlimited.
const (
	cfsPeriod      = 100000
	unlimitedQuota = -1
	// unlimitedMemory is memory.limit_in_bytes of a cgroup without a limit: the largest page-aligned int64.
	unlimitedMemory = 9223372036854771712
)

func expectedShares(requestMilli int64) int64 { return max(2, requestMilli*1024/1000) }

func expectedQuota(limitMilli int64) int64 {
	if limitMilli == 0 {
		return unlimitedQuota
	}
	return max(1000, limitMilli*cfsPeriod/1000)
}

// cgroupValues are the files the test reads in one cgroup directory.
type cgroupValues struct {
	Shares, Quota, Period, MemoryLimit int64
}

// A real pod lands in the cgroup v1 directory of its QoS class, and its pod and container cgroups hold the values
// the kubelet's rules give for its requests and limits.
func TestPodCgroupsFollowRequestsAndLimits(t *testing.T) {
	e := suite.Env(t)
	tests := []struct {
		name string
		// qosDir is the pod's parent under kubepods/.
		qosDir            string
		requests, limits  []string
		wantPod, wantCtnr cgroupValues
	}{
		{
			name: "burstable", qosDir: "burstable",
			requests: []string{"cpu", "250m", "memory", "64Mi"}, limits: []string{"cpu", "500m", "memory", "128Mi"},
			wantCtnr: cgroupValues{Shares: expectedShares(250), Quota: expectedQuota(500), Period: cfsPeriod, MemoryLimit: 128 << 20},
			wantPod:  cgroupValues{Shares: expectedShares(250), Quota: expectedQuota(500), Period: cfsPeriod, MemoryLimit: 128 << 20},
		},
		{
			name: "guaranteed", qosDir: "",
			requests: []string{"cpu", "300m", "memory", "96Mi"}, limits: []string{"cpu", "300m", "memory", "96Mi"},
			wantCtnr: cgroupValues{Shares: expectedShares(300), Quota: expectedQuota(300), Period: cfsPeriod, MemoryLimit: 96 << 20},
			wantPod:  cgroupValues{Shares: expectedShares(300), Quota: expectedQuota(300), Period: cfsPeriod, MemoryLimit: 96 << 20},
		},
		{
			name: "besteffort", qosDir: "besteffort",
			wantCtnr: cgroupValues{Shares: expectedShares(0), Quota: unlimitedQuota, Period: cfsPeriod, MemoryLimit: unlimitedMemory},
			wantPod:  cgroupValues{Shares: expectedShares(0), Quota: unlimitedQuota, Period: cfsPeriod, MemoryLimit: unlimitedMemory},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testutil.Pod("cgroups-" + tt.name).Container("c").Image(PauseImage)
			if len(tt.requests) > 0 {
				b = b.Requests(tt.requests...)
			}
			if len(tt.limits) > 0 {
				b = b.Limits(tt.limits...)
			}
			got := e.RunPod(b.Obj())

			podDir := filepath.Join("kubepods", tt.qosDir, "pod"+string(got.UID))
			ctnrDir := filepath.Join(podDir, containerID(t, got))
			if diff := cmp.Diff(tt.wantPod, readCgroup(t, podDir)); diff != "" {
				t.Errorf("pod cgroup %s (-want +got):\n%s", podDir, diff)
			}
			if diff := cmp.Diff(tt.wantCtnr, readCgroup(t, ctnrDir)); diff != "" {
				t.Errorf("container cgroup %s (-want +got):\n%s", ctnrDir, diff)
			}
			for _, ctl := range []string{"cpu", "memory"} {
				procs := readFile(t, filepath.Join("/sys/fs/cgroup", ctl, ctnrDir, "cgroup.procs"))
				if strings.TrimSpace(procs) == "" {
					t.Errorf("no process in the %s cgroup %s: the container does not run there", ctl, ctnrDir)
				}
			}
		})
	}
}

// containerID is the runtime's ID of the pod's first container: its cgroup's name.
func containerID(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container status", pod.Name)
	}
	id := pod.Status.ContainerStatuses[0].ContainerID
	_, after, ok := strings.Cut(id, "://")
	if !ok {
		t.Fatalf("container ID %q is not runtime://id", id)
	}
	return after
}

func readCgroup(t *testing.T, rel string) cgroupValues {
	t.Helper()
	return cgroupValues{
		Shares:      readInt(t, filepath.Join("/sys/fs/cgroup/cpu", rel, "cpu.shares")),
		Quota:       readInt(t, filepath.Join("/sys/fs/cgroup/cpu", rel, "cpu.cfs_quota_us")),
		Period:      readInt(t, filepath.Join("/sys/fs/cgroup/cpu", rel, "cpu.cfs_period_us")),
		MemoryLimit: readInt(t, filepath.Join("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes")),
	}
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.TrimSpace(readFile(t, path)), 10, 64)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return v
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(b)
}
