package proc

import (
	"strings"
	"testing"
)

func TestCgroupPath(t *testing.T) {
	f := open(t, "pids")
	tests := []struct {
		pid     int
		want    string
		wantErr string
	}{
		// A hybrid host: the kubelet's v1 memory path, not systemd's v2 one.
		{pid: 42, want: "/kubepods/burstable/podaaaa/ctr1"},
		{pid: 43, want: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podbbbb.slice/cri-containerd-ctr2.scope"},
		{pid: 44, wantErr: "no cgroup listed"},
		{pid: 45, wantErr: "process 45"},
	}
	for _, tt := range tests {
		got, err := f.CgroupPath(tt.pid)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CgroupPath(%d) error = %v, want one containing %q", tt.pid, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CgroupPath(%d) = %q, %v, want %q", tt.pid, got, err, tt.want)
		}
	}
}

func TestMountInfo(t *testing.T) {
	m, err := open(t, "pids").MountInfo(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 5 || m[4].MountPoint != "/var/lib/containerd" || m[4].FSType != "xfs" || m[4].MajorMinorVer != "259:2" {
		t.Errorf("MountInfo(1) = %d mounts, last %+v", len(m), m[len(m)-1])
	}
	if _, err := open(t, "pids").MountInfo(42); err == nil || !strings.Contains(err.Error(), "process 42") {
		t.Errorf("MountInfo of a process without the file = %v, want an error naming it", err)
	}
}
