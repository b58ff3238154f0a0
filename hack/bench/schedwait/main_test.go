package main

import "testing"

func TestCPUCgroup(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"12:cpuset:/kubepods/burstable/podA/c1\n3:cpu,cpuacct:/kubepods/burstable/podA/c1\n1:name=systemd:/x\n", "/kubepods/burstable/podA/c1"},
		{"0::/kubepods.slice/kubepods-besteffort.slice/x\n", "/kubepods.slice/kubepods-besteffort.slice/x"},
		// Hybrid: the v1 cpu controller wins over the unified hierarchy.
		{"0::/user.slice\n2:cpuacct,cpu:/system.slice/containerd.service\n", "/system.slice/containerd.service"},
		{"", ""},
	} {
		if got := cpuCgroup(c.in); got != c.want {
			t.Errorf("cpuCgroup(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	c := &classifier{pod: "/kubepods/burstable/podA", known: map[int]string{}}
	for path, want := range map[string]string{
		"/kubepods/burstable/podA/c1":                                "pod",
		"/kubepods/besteffort/podB/c2":                               "batch",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-x.slice": "batch",
		"/kubepods/burstable/podC/c3":                                "other pods",
		"/":                                                          "system",
	} {
		if got := c.ofPath(path); got != want {
			t.Errorf("class of %s: %q, want %q", path, got, want)
		}
	}
	if c.class(0) != "idle" || c.class(1<<30) != "gone" {
		t.Errorf("pid 0 is %q, a pid that is not there %q", c.class(0), c.class(1<<30))
	}
}
