package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// copyFixture copies a fixture tree into a temporary directory the test may change.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestKeepOpen(t *testing.T) {
	root := copyFixture(t, "v1-cgroupfs")
	f := NewFS(root, V1).KeepOpen(3)
	defer f.Close()
	pod := Layout{Driver: Cgroupfs}.PodDir(burstablePod())
	usage := filepath.Join(root, "cpuacct", pod, "cpuacct.usage")

	if u, err := f.CPUUsage(pod); err != nil || u != 88394832141 {
		t.Fatalf("CPUUsage = %v, %v", u, err)
	}
	if n := f.OpenFiles(); n != 1 {
		t.Fatalf("open files = %d, want 1", n)
	}
	// The kept file is read again from the start: a value rewritten in place is seen.
	if err := os.WriteFile(usage, []byte("99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if u, err := f.CPUUsage(pod); err != nil || u != 99 {
		t.Fatalf("CPUUsage after the rewrite = %v, %v; want 99", u, err)
	}
	// At most 3 files are kept; the others are read and closed.
	for _, read := range []func() error{
		func() error { _, err := f.MemoryStat(pod); return err },
		func() error { _, err := f.CPUStat(pod); return err },
		func() error { _, err := f.CPUShares(pod); return err },
		func() error { _, err := f.MemoryLimit(pod); return err },
	} {
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.OpenFiles(); n != 3 {
		t.Fatalf("open files = %d, want the maximum 3", n)
	}
	// A sweep keeps what was read since the last one; the next closes what was not read again.
	if n := f.Sweep(); n != 0 {
		t.Errorf("first sweep closed %d, want 0", n)
	}
	if _, err := f.CPUUsage(pod); err != nil {
		t.Fatal(err)
	}
	if n := f.Sweep(); n != 2 || f.OpenFiles() != 1 {
		t.Errorf("second sweep closed %d leaving %d, want 2 leaving 1", n, f.OpenFiles())
	}
	// A cgroup that is never opened still reads as gone.
	if _, err := f.CPUUsage(pod + "-gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing cgroup: %v", err)
	}
}

// TestKeepOpenConcurrent reads, sweeps and drops at once; with -race it checks the locking, and every read must
// return the file's value (never another file's, as a reused descriptor would).
func TestKeepOpenConcurrent(t *testing.T) {
	root := copyFixture(t, "v2-cgroupfs")
	f := NewFS(root, V2).KeepOpen(2)
	defer f.Close()
	l := Layout{Driver: Cgroupfs}
	pod, be := l.PodDir(burstablePod()), l.QoSDir("BestEffort")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				switch (g + i) % 3 {
				case 0:
					if q, err := f.CPUQuota(pod); err != nil || q.Cores() != 0.5 {
						t.Errorf("pod quota = %v, %v", q, err)
						return
					}
				case 1:
					if q, err := f.CPUQuota(be); err != nil || q.Cores() != 2 {
						t.Errorf("besteffort quota = %v, %v", q, err)
						return
					}
				default:
					f.Sweep()
				}
			}
		})
	}
	wg.Wait()
}
