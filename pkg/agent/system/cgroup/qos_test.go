package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// TestQoSFiles writes every QoS tuning file of the burstable pod on each fixture tree, checks the file's content,
// and reads it back through the Reader. Upstream v1 has no memory.min/low/high/oom.group: those say
// system.ErrUnsupported there.
func TestQoSFiles(t *testing.T) {
	sda := Device{Major: 8, Minor: 0}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", f.name))); err != nil {
				t.Fatal(err)
			}
			rw := NewFS(root, f.version)
			pod := Layout{Driver: f.driver}.PodDir(burstablePod())
			content := func(file string) string {
				t.Helper()
				sub, name := "", file
				if f.version == V1 {
					sub, name, _ = strings.Cut(file, "/")
				}
				b, err := os.ReadFile(filepath.Join(rw.Dir(sub, pod), name))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			v2 := f.version == V2

			check(t, "SetCPUIdle", rw.SetCPUIdle(pod, true))
			diff(t, "cpu.idle", "1", content(map[bool]string{false: "cpu/cpu.idle", true: "cpu.idle"}[v2]))
			idle, err := rw.CPUIdle(pod)
			check(t, "CPUIdle", err)
			diff(t, "CPUIdle", true, idle)

			memory := []struct {
				file  string
				set   func(string, int64) error
				get   func(string) (int64, error)
				value int64
				want  string
			}{
				{"memory.min", rw.SetMemoryMin, rw.MemoryMin, 64 << 20, "67108864"},
				{"memory.low", rw.SetMemoryLow, rw.MemoryLow, -1, "max"},
				{"memory.high", rw.SetMemoryHigh, rw.MemoryHigh, 900 << 20, "943718400"},
			}
			for _, m := range memory {
				err := m.set(pod, m.value)
				if !v2 {
					if !errors.Is(err, system.ErrUnsupported) {
						t.Errorf("v1 %s: want system.ErrUnsupported, got %v", m.file, err)
					}
					continue
				}
				check(t, m.file, err)
				diff(t, m.file, m.want, content(m.file))
				got, err := m.get(pod)
				check(t, m.file, err)
				diff(t, m.file+" read back", m.value, got)
			}
			err = rw.SetMemoryOOMGroup(pod, true)
			if v2 {
				check(t, "SetMemoryOOMGroup", err)
				group, err := rw.MemoryOOMGroup(pod)
				check(t, "MemoryOOMGroup", err)
				diff(t, "MemoryOOMGroup", true, group)
			} else if !errors.Is(err, system.ErrUnsupported) {
				t.Errorf("v1 memory.oom.group: want system.ErrUnsupported, got %v", err)
			}

			limit := IOLimit{ReadBPS: 10 << 20, WriteIOPS: 300}
			check(t, "SetIOLimit", rw.SetIOLimit(pod, sda, limit))
			if v2 {
				diff(t, "io.max", "8:0 rbps=10485760 wbps=max riops=max wiops=300", content("io.max"))
			} else {
				diff(t, "read_bps", "8:0 10485760", content("blkio/blkio.throttle.read_bps_device"))
				diff(t, "write_bps", "8:0 0", content("blkio/blkio.throttle.write_bps_device"))
				diff(t, "write_iops", "8:0 300", content("blkio/blkio.throttle.write_iops_device"))
			}
			limits, err := rw.IOLimits(pod)
			check(t, "IOLimits", err)
			diff(t, "IOLimits", map[Device]IOLimit{sda: limit}, limits)

			check(t, "SetIOWeight", rw.SetIOWeight(pod, 40))
			diff(t, "weight file", map[bool]string{false: "40", true: "default 40"}[v2],
				content(map[bool]string{false: "blkio/blkio.bfq.weight", true: "io.weight"}[v2]))
			w, err := rw.IOWeight(pod)
			check(t, "IOWeight", err)
			diff(t, "IOWeight", uint64(40), w)
		})
	}
}

// TestQoSFilesOldKernel: a kernel before 5.15 has no cpu.idle, and a v1 node without the blkio hierarchy has no
// throttle files; both say system.ErrUnsupported, not that the cgroup is gone.
func TestQoSFilesOldKernel(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/v1-oldkernel")); err != nil {
		t.Fatal(err)
	}
	rw := NewFS(root, V1)
	pod := Layout{Driver: Cgroupfs}.PodDir(burstablePod())
	if err := rw.SetCPUIdle(pod, true); !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("cpu.idle on an old kernel: want system.ErrUnsupported, got %v", err)
	}
	if _, err := rw.CPUIdle(pod); !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("reading cpu.idle on an old kernel: want system.ErrUnsupported, got %v", err)
	}
}

func TestParseIOFiles(t *testing.T) {
	limits := map[Device]IOLimit{}
	err := parseIOMax([]byte("8:16 rbps=2097152 wbps=max riops=max wiops=120\n253:0 rbps=max wbps=1024 riops=5 wiops=max\n"), limits)
	checkParse(t, limits, err, map[Device]IOLimit{
		{8, 16}:  {ReadBPS: 2097152, WriteIOPS: 120},
		{253, 0}: {WriteBPS: 1024, ReadIOPS: 5},
	}, "")
	err = parseIOMax([]byte("8:16 rbps\n"), map[Device]IOLimit{})
	checkParse(t, nil, err, nil, "is not key=value")
	err = parseIOMax([]byte("sda rbps=1\n"), map[Device]IOLimit{})
	checkParse(t, nil, err, nil, "is not major:minor")

	w, err := parseIOWeight([]byte("default 100\n8:16 200\n"))
	checkParse(t, w, err, uint64(100), "")
	w, err = parseIOWeight([]byte("500\n"))
	checkParse(t, w, err, uint64(500), "")
	_, err = parseIOWeight([]byte("8:16 200\n"))
	checkParse(t, nil, err, nil, "no default weight")

	var got []string
	err = parseDeviceValues([]byte("8:0 1048576\n7:1 5\n"), func(d Device, v uint64) { got = append(got, d.String()+"="+strconv.FormatUint(v, 10)) })
	checkParse(t, got, err, []string{"8:0=1048576", "7:1=5"}, "")
	err = parseDeviceValues([]byte("8:0\n"), func(Device, uint64) {})
	checkParse(t, nil, err, nil, "is not \"major:minor value\"")
}

// TestCPUSetRefusesHugeLists: a cpuset file naming CPUs up to 99,999,999,999 (which hung the agent in cpuset.Parse)
// is an error naming the bound, at once.
func TestCPUSetRefusesHugeLists(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/v1-cgroupfs")); err != nil {
		t.Fatal(err)
	}
	pod := Layout{Driver: Cgroupfs}.PodDir(burstablePod())
	if err := os.WriteFile(filepath.Join(root, "cpuset", pod, "cpuset.effective_cpus"), []byte("0-99999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFS(root, V1).CPUSet(pod); err == nil || !strings.Contains(err.Error(), "above 65535") {
		t.Errorf("CPUSet of a huge list: %v, want an error naming the bound", err)
	}
}

// TestHugeFilesAreNotRead: a memory.stat of 2 MiB is refused with an error naming the file, not read whole.
func TestHugeFilesAreNotRead(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/v1-cgroupfs")); err != nil {
		t.Fatal(err)
	}
	pod := Layout{Driver: Cgroupfs}.PodDir(burstablePod())
	huge := strings.Repeat("total_cache 1\n", (2<<20)/14)
	if err := os.WriteFile(filepath.Join(root, "memory", pod, "memory.stat"), []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fs := range []*FS{NewFS(root, V1), NewFS(root, V1).KeepOpen(16)} {
		_, err := fs.MemoryStat(pod)
		if err == nil || !strings.Contains(err.Error(), "not read") || !strings.Contains(err.Error(), "memory.stat") {
			t.Errorf("MemoryStat of a 2 MiB file: %v, want an error naming the file and the bound", err)
		}
	}
}
