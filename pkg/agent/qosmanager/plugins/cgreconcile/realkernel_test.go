package cgreconcile

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/ci"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// TestRealKernelMemoryMinUnderPressure puts two pods' page cache under real reclaim on cgroup v2: a Guaranteed LSR
// pod ("db", 160 MiB requested) and a best-effort neighbour each read 150 MiB of the test kernel's scratch disk,
// and then the kubepods cgroup's memory.max drops to 200 MiB, so the kernel must reclaim about 100 MiB among them.
//
//  1. Without memory QoS (the control): the db pod loses part of its cache too; otherwise there was no pressure
//     and the second round would prove nothing.
//  2. With memoryQOS on for LSR (minLimitPercent 100: memory.min = the request, on the container, the pod and the
//     QoS parents): the db pod keeps its cache and the neighbour is reclaimed instead.
//
// memory.min exists only on v2; the cache is the kernel's own accounting (memory.current).
func TestRealKernelMemoryMinUnderPressure(t *testing.T) {
	box := cgrouptest.New(t)
	box.Only(cgroup.V2, "memory QoS's files exist only on v2")
	box.Require("memory")
	dev := os.Getenv(cgrouptest.BlockDeviceEnv)
	if dev == "" {
		ci.Skipf(t, "this test fills page cache from a scratch block device (%s, set by make test-cgroupv2)", cgrouptest.BlockDeviceEnv)
	}
	const mi = 1 << 20
	l, fs := box.Layout(), box.FS()
	db := tu.Pod("db").UID("d6000000-0000-4000-8000-000000000001").Label(slov1alpha1.LabelQoSClass, "LSR").
		Container("main").Requests("cpu", "1", "memory", "160Mi").Limits("cpu", "1", "memory", "160Mi").Running("containerd://db").Obj()
	batch := tu.Pod("batch").UID("d6000000-0000-4000-8000-0000000000be").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("main").Running("containerd://batch").Obj()
	store := statesinformer.NewStore()
	ctr := map[string]string{}
	for name, pod := range map[string]*corev1.Pod{"db": db, "batch": batch} {
		dir, err := l.ContainerDir(l.PodDir(pod), pod.Status.ContainerStatuses[0].ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		box.Mkdir(dir)
		store.SetPod(pod)
		ctr[name] = dir
	}
	current := func(dir string) int64 {
		t.Helper()
		b, err := os.ReadFile(box.Path("memory", dir) + "/memory.current")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// fill reads 150 MiB of the disk (the db pod the first, the neighbour the second 150 MiB) into the pod's page
	// cache and waits until the kernel has charged it. The process keeps the device open (fd 3): the kernel drops a
	// block device's page cache when its last opener closes it.
	fill := func(name string, skip int) {
		t.Helper()
		box.Start(ctr[name], "/bin/sh", "-c", fmt.Sprintf("exec 3<%[1]s; dd if=%[1]s of=/dev/null bs=1M count=150 skip=%[2]d; exec sleep 600", dev, skip))
		for deadline := time.Now().Add(60 * time.Second); current(ctr[name]) < 140*mi; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the %s pod holds %d MiB 60 s after reading 150 MiB", name, current(ctr[name])/mi)
			}
		}
	}
	squeeze := func(round string) (dbKept, batchKept int64) {
		t.Helper()
		fill("db", 0)
		fill("batch", 150)
		if err := fs.SetMemoryLimit(l.Kubepods(), 200*mi); err != nil {
			t.Fatalf("%s: lowering memory.max of %s to 200 MiB: %v", round, l.Kubepods(), err)
		}
		dbKept, batchKept = current(ctr["db"]), current(ctr["batch"])
		t.Logf("%s: after memory.max 200 MiB on kubepods the db pod holds %d MiB, the neighbour %d MiB", round, dbKept/mi, batchKept/mi)
		if err := fs.SetMemoryLimit(l.Kubepods(), -1); err != nil {
			t.Fatal(err)
		}
		return dbKept, batchKept
	}

	if dbKept, _ := squeeze("without memory QoS"); dbKept >= 140*mi {
		t.Fatalf("without protection the db pod kept %d MiB of its 150: the squeeze did not reach it, so it proves nothing", dbKept/mi)
	}

	exe, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(qosmanager.Deps{States: store, Executor: exe, Cgroups: fs, Layout: l, StateDir: t.TempDir(), Clock: clock.RealClock{}, Interval: DefaultInterval})
	if err != nil {
		t.Fatal(err)
	}
	s := slov1alpha1.DefaultResourceQOSStrategy()
	m := s.LSRClass.MemoryQOS
	m.Enable, m.MinLimitPercent, m.LowLimitPercent, m.ThrottlingPercent, m.OomKillGroup = ptr.To(true), ptr.To[int64](100), ptr.To[int64](0), ptr.To[int64](0), ptr.To[int64](0)
	if err := p.Run(context.Background(), (&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: s}).WithDefaults()); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{ctr["db"], l.PodDir(db), l.Kubepods()} {
		if v, err := fs.MemoryMin(dir); err != nil || v != 160*mi {
			t.Errorf("memory.min of %s = %d, %v; want the db pod's request, 160 MiB", dir, v, err)
		}
	}
	dbKept, batchKept := squeeze("with memory.min")
	if dbKept < 140*mi {
		t.Errorf("with memory.min 160 MiB the db pod kept only %d MiB of its 150 under the squeeze", dbKept/mi)
	}
	if batchKept > 70*mi {
		t.Errorf("the unprotected neighbour kept %d MiB; the 100 MiB reclaimed should have come from it", batchKept/mi)
	}
}
