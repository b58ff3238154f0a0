package cgroup

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTasks(t *testing.T) {
	tests := []struct {
		name    string
		version Version
		files   map[string]string
		want    []int
		wantErr string
		gone    bool
	}{
		{
			name:    "v1: threads of the pod and its containers, from the memory hierarchy",
			version: V1,
			files: map[string]string{
				"memory/" + pod + "/tasks":           "",
				"memory/" + pod + "/pause/tasks":     "10\n",
				"memory/" + pod + "/c1/tasks":        "20\n21\n22\n",
				"memory/" + pod + "/c1/cgroup.procs": "20\n", // processes: not what resctrl takes
				"cpu/" + pod + "/tasks":              "99\n", // the memory hierarchy is read first
			},
			want: []int{10, 20, 21, 22},
		},
		{
			name:    "v1 without a memory hierarchy: the cpu one",
			version: V1,
			files:   map[string]string{"cpu/" + pod + "/c1/tasks": "7\n8\n", "cpu/" + pod + "/tasks": ""},
			want:    []int{7, 8},
		},
		{
			name:    "v2: cgroup.threads",
			version: V2,
			files: map[string]string{
				pod + "/cgroup.threads":    "",
				pod + "/c1/cgroup.threads": "30\n31\n",
				pod + "/c1/cgroup.procs":   "30\n",
			},
			want: []int{30, 31},
		},
		{
			name:    "a task outside the pid namespace",
			version: V2,
			files:   map[string]string{pod + "/cgroup.threads": "0\n"},
			wantErr: "outside this pid namespace",
		},
		{
			name:    "a cgroup that is gone",
			version: V1,
			files:   map[string]string{"memory/kubepods/tasks": ""},
			gone:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewFS(tree(t, tt.files), tt.version).Tasks(pod)
			switch {
			case tt.gone:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Tasks = %v, %v; want fs.ErrNotExist", got, err)
				}
				return
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Tasks = %v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			slices.Sort(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("tasks (-want +got):\n%s", d)
			}
		})
	}
}

// TestProcs: processes, not threads, of the cgroup and its children, on both versions; a cgroup that is gone is
// fs.ErrNotExist.
func TestProcs(t *testing.T) {
	for _, tt := range []struct {
		version Version
		files   map[string]string
		want    []int
	}{
		{V1, map[string]string{
			"memory/" + pod + "/cgroup.procs":    "",
			"memory/" + pod + "/c1/cgroup.procs": "20\n",
			"memory/" + pod + "/c1/tasks":        "20\n21\n",
			"memory/" + pod + "/c2/cgroup.procs": "40\n41\n",
		}, []int{20, 40, 41}},
		{V2, map[string]string{
			pod + "/cgroup.procs":      "",
			pod + "/c1/cgroup.procs":   "30\n",
			pod + "/c1/cgroup.threads": "30\n31\n",
		}, []int{30}},
	} {
		t.Run(tt.version.String(), func(t *testing.T) {
			f := NewFS(tree(t, tt.files), tt.version)
			got, err := f.Procs(pod)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("processes (-want +got):\n%s", d)
			}
			if _, err := f.Procs(pod + "/gone"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Procs of a cgroup that is gone: %v; want fs.ErrNotExist", err)
			}
		})
	}
}
