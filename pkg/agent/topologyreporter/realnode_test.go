package topologyreporter

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// TestRealNode computes the zones of this machine from its real /sys and checks them against what the kernel says
// elsewhere: as many zones as devices/system/node/online lists, as many CPUs as /proc/cpuinfo lists processors
// (only online ones appear there), and memory that is there and within /proc/meminfo's MemTotal. (Equality holds on
// most machines; a VM with hot-plugged memory, such as the one this was written on, shows less in its nodes.)
func TestRealNode(t *testing.T) {
	topo, err := topology.Read("/sys")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/sys/devices/system/node/online")
	if err != nil {
		t.Fatal(err)
	}
	online, err := cpulist.Parse(string(b)) // a NUMA node list has the CPU list's format
	if err != nil {
		t.Fatal(err)
	}
	processors, memTotal := procCPUs(t), procMemTotal(t)

	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(processors), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memTotal, resource.BinarySI),
	}
	zones, err := Zones(topo, capacity, capacity, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != online.Size() {
		t.Errorf("%d zones, want %d (devices/system/node/online: %s)", len(zones), online.Size(), strings.TrimSpace(string(b)))
	}
	var cpuMilli, mem int64
	for _, z := range zones {
		cpuMilli += z.Resources[0].Capacity.MilliValue()
		mem += z.Resources[1].Capacity.Value()
		if z.Resources[0].Allocatable.Cmp(z.Resources[0].Capacity) > 0 || z.Resources[1].Allocatable.Cmp(z.Resources[1].Capacity) > 0 {
			t.Errorf("zone %s: allocatable above capacity: %+v", z.Name, z.Resources)
		}
	}
	if cpuMilli != int64(processors)*1000 {
		t.Errorf("the zones hold %dm CPU, want %d processors of /proc/cpuinfo", cpuMilli, processors)
	}
	if mem <= 0 || mem > memTotal {
		t.Errorf("the zones hold %d bytes of memory, want some and at most /proc/meminfo's MemTotal %d", mem, memTotal)
	}
	t.Logf("%d zones, %d CPUs, %d of %d bytes of memory", len(zones), cpuMilli/1000, mem, memTotal)
}

func procCPUs(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if err := sc.Err(); err != nil || n == 0 {
		t.Fatalf("reading /proc/cpuinfo: %d processors, %v", n, err)
	}
	return n
}

func procMemTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}
