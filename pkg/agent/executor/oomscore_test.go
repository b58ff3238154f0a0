package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// TestOOMScoreAdj: every process of a container's cgroup and the cgroups below it gets the value, a process that
// exited meanwhile is skipped, drift is undone at the resync, a cgroup that is gone is "gone" and no longer held,
// and an executor without a host writer refuses the value.
func TestOOMScoreAdj(t *testing.T) {
	root, host := newTree(t), t.TempDir()
	ctr := podA + "/ctr1"
	write := func(base, rel, content string) {
		t.Helper()
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 103 is listed but has exited (no /proc/103); 104 is in a cgroup below the container's.
	write(root, "memory/"+ctr+"/cgroup.procs", "101\n102\n103\n")
	write(root, "memory/"+ctr+"/sub/cgroup.procs", "104\n")
	write(root, "memory/"+podA+"/cgroup.procs", "100\n") // the sandbox: not the container's
	for _, pid := range []string{"100", "101", "102", "104"} {
		write(host, "proc/"+pid+"/oom_score_adj", "1000\n")
	}
	adj := func(pid string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(host, "proc", pid, "oom_score_adj"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	opts := DefaultOptions()
	opts.Host = system.NewHostFS(host)
	e, _, _, _ := newExecutor(t, root, opts)
	ctx := context.Background()

	if err := e.Apply(ctx, "runtimehook", Update{Dir: ctr, Value: OOMScoreAdj(250)}); err != nil {
		t.Fatal(err)
	}
	for pid, want := range map[string]string{"100": "1000", "101": "250", "102": "250", "104": "250"} {
		if got := adj(pid); got != want {
			t.Errorf("oom_score_adj of %s = %s, want %s", pid, got, want)
		}
	}
	if v, err := OOMScoreAdj(0).read(e.targets, ctr); err != nil || v != OOMScoreAdj(250) {
		t.Errorf("read = %v, %v; want 250", v, err)
	}

	// A process changed behind the executor's back: read says the values differ, the resync writes them again.
	write(host, "proc/102/oom_score_adj", "-500\n")
	if _, err := OOMScoreAdj(0).read(e.targets, ctr); err == nil || !strings.Contains(err.Error(), "not one value") {
		t.Errorf("read of differing processes: %v; want an error saying so", err)
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := adj("102"); got != "250" {
		t.Errorf("after the resync oom_score_adj of 102 = %s, want 250", got)
	}

	// The container's cgroup is gone: "gone", and the value is no longer held.
	if err := os.RemoveAll(filepath.Join(root, "memory", ctr)); err != nil {
		t.Fatal(err)
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatalf("a cgroup that is gone is not an error: %v", err)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceOOMScoreAdj), ResultGone)); got != 1 {
		t.Errorf("gone writes = %v, want 1", got)
	}
	if n := len(e.held); n != 0 {
		t.Errorf("%d values still held after the cgroup went", n)
	}

	// Without a host writer the value cannot be written.
	bare, _, _, _ := newExecutor(t, root, DefaultOptions())
	if err := (OOMScoreAdj(1)).write(bare.targets, podA); !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("write without a host writer: %v; want system.ErrUnsupported", err)
	}
}
