package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// tree writes files (path relative to root -> content) under a fresh directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// recorder is an injected SIGKILL that records the pids and can make one of them fail.
type recorder struct {
	pids []int
	errs map[int]error
}

func (r *recorder) kill(pid int) error {
	r.pids = append(r.pids, pid)
	return r.errs[pid]
}

const pod = "kubepods/besteffort/pod1234"

func TestKill(t *testing.T) {
	tests := []struct {
		name    string
		version Version
		files   map[string]string
		// wantKillFile is the cgroup.kill file (relative to root) that must hold "1" afterwards, "" for none.
		wantKillFile string
		wantPids     []int
		wantErr      string
		wantNotExist bool
	}{
		{
			name:    "v2 with cgroup.kill: one write, no signal",
			version: V2,
			files: map[string]string{
				pod + "/cgroup.kill": "", pod + "/cgroup.procs": "11\n",
				pod + "/ctr/cgroup.kill": "", pod + "/ctr/cgroup.procs": "12\n",
			},
			wantKillFile: pod + "/cgroup.kill",
		},
		{
			name:    "v2 without cgroup.kill (kernel before 5.14): every pid of the subtree",
			version: V2,
			files: map[string]string{
				pod + "/cgroup.procs": "", pod + "/ctr1/cgroup.procs": "21\n22\n", pod + "/ctr2/cgroup.procs": "23\n",
				"kubepods/besteffort/cgroup.procs": "99\n", // the parent's processes are not the pod's
			},
			wantPids: []int{21, 22, 23},
		},
		{
			name:    "v1: the memory hierarchy, recursively",
			version: V1,
			files: map[string]string{
				"memory/" + pod + "/cgroup.procs": "31\n", "memory/" + pod + "/ctr/cgroup.procs": "32\n33\n",
				"cpu/" + pod + "/cgroup.procs": "31\n", // the same processes: not read again
			},
			wantPids: []int{31, 32, 33},
		},
		{
			name:     "v1 without a memory hierarchy: the cpu one",
			version:  V1,
			files:    map[string]string{"cpu/" + pod + "/cgroup.procs": "", "cpu/" + pod + "/ctr/cgroup.procs": "41\n"},
			wantPids: []int{41},
		},
		{
			name:         "v1: a pod that is gone",
			version:      V1,
			files:        map[string]string{"memory/kubepods/cgroup.procs": "1\n"},
			wantErr:      "no such cgroup",
			wantNotExist: true,
		},
		{
			name:         "v2: a pod that is gone",
			version:      V2,
			files:        map[string]string{"kubepods/cgroup.procs": "1\n"},
			wantErr:      "does not exist",
			wantNotExist: true,
		},
		{
			name:    "processes of another pid namespace are never signalled",
			version: V1,
			files:   map[string]string{"memory/" + pod + "/cgroup.procs": "0\n0\n"},
			wantErr: "needs hostPID",
		},
		{
			name:    "a garbled process list",
			version: V1,
			files:   map[string]string{"memory/" + pod + "/cgroup.procs": "51\nfoo\n"},
			wantErr: "parsing",
		},
		{
			name:    "the agent's own cgroup is refused",
			version: V1,
			files:   map[string]string{"memory/" + pod + "/cgroup.procs": strconv.Itoa(os.Getpid())},
			wantErr: "the agent itself",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files)
			r := &recorder{}
			err := NewFS(root, tt.version).kill(pod, r.kill)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				if got := errors.Is(err, fs.ErrNotExist); got != tt.wantNotExist {
					t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.wantNotExist)
				}
				if len(r.pids) != 0 {
					t.Errorf("signalled %v despite the error", r.pids)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(r.pids)
			if diff := cmp.Diff(tt.wantPids, r.pids); diff != "" {
				t.Errorf("signalled pids (-want +got):\n%s", diff)
			}
			if tt.wantKillFile != "" {
				b, err := os.ReadFile(filepath.Join(root, tt.wantKillFile))
				if err != nil || string(b) != "1" {
					t.Errorf("%s = %q, %v; want \"1\"", tt.wantKillFile, b, err)
				}
			}
		})
	}
}

// TestKillPasses: a process that appears after the first pass (forked before its parent died) is signalled in the
// next one, a process that is gone already (ESRCH) is no error, and another signal error stops the kill.
func TestKillPasses(t *testing.T) {
	root := tree(t, map[string]string{"memory/" + pod + "/cgroup.procs": "61\n62\n"})
	procs := filepath.Join(root, "memory", pod, "cgroup.procs")
	r := &recorder{errs: map[int]error{62: unix.ESRCH}}
	fork := func(pid int) error {
		if pid == 61 {
			// 61 forked 63 just before the signal; 61 and 62 have not left the list yet.
			if err := os.WriteFile(procs, []byte("61\n62\n63\n"), 0); err != nil {
				t.Fatal(err)
			}
		}
		return r.kill(pid)
	}
	if err := NewFS(root, V1).kill(pod, fork); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{61, 62, 63}, r.pids); diff != "" {
		t.Errorf("signalled pids (-want +got):\n%s", diff)
	}

	r = &recorder{errs: map[int]error{61: unix.EPERM}}
	if err := NewFS(root, V1).kill(pod, r.kill); !errors.Is(err, unix.EPERM) {
		t.Errorf("a refused signal: err = %v, want EPERM", err)
	}
}

// TestKillEndlessForks: a cgroup that keeps gaining processes is reported after killPasses passes.
func TestKillEndlessForks(t *testing.T) {
	root := tree(t, map[string]string{"memory/" + pod + "/cgroup.procs": "100\n"})
	procs := filepath.Join(root, "memory", pod, "cgroup.procs")
	next := 100
	forkBomb := func(pid int) error {
		next++
		return os.WriteFile(procs, []byte(strconv.Itoa(next)), 0)
	}
	err := NewFS(root, V1).kill(pod, forkBomb)
	if err == nil || !strings.Contains(err.Error(), "new processes still appeared") {
		t.Fatalf("err = %v", err)
	}
	if next-100 != killPasses {
		t.Errorf("signalled %d processes, want one per pass (%d)", next-100, killPasses)
	}
}
