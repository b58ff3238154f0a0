package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.json")
	if _, err := readState(path); !errors.Is(err, errNoState) {
		t.Fatalf("readState of a missing file = %v, want errNoState", err)
	}
	want := &State{
		StartedAt:        time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Processes:        []Process{{Name: "etcd", PID: 42, StartTime: 7, Command: []string{"etcd", "--x"}}},
		CreatedHostPaths: []string{"/var/lib/kubelet"},
		IPForward:        "0",
	}
	if err := want.write(path); err != nil {
		t.Fatal(err)
	}
	got, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if len(got.alive()) != 0 {
		t.Error("a made-up process counts as alive")
	}
}

func TestReadStateMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(path, []byte(`{"processes": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readState(path)
	if err == nil || errors.Is(err, errNoState) || !strings.Contains(err.Error(), path) {
		t.Errorf("readState of a truncated file = %v, want an error naming %s", err, path)
	}
}

// TestRunning: a state directory whose recorded process runs is a running cluster, named in the error with the
// way to stop it; a directory without state, with dead processes or with an unreadable state file is not.
func TestRunning(t *testing.T) {
	st, err := procStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	empty, dead, garbled, live := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	started := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	deadState := &State{StartedAt: started, Processes: []Process{{Name: "etcd", PID: os.Getpid(), StartTime: st.Starttime + 1}}}
	if err := deadState.write(Layout{Dir: dead}.StateFile()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Layout{Dir: garbled}.StateFile(), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	liveState := &State{StartedAt: started, Processes: []Process{
		{Name: "etcd", PID: os.Getpid(), StartTime: st.Starttime},
		{Name: "kubelet", PID: os.Getpid(), StartTime: st.Starttime + 1},
	}}
	if err := liveState.write(Layout{Dir: live}.StateFile()); err != nil {
		t.Fatal(err)
	}

	if err := Running(empty, dead, garbled, ""); err != nil {
		t.Errorf("no cluster runs, got %v", err)
	}
	err = Running(empty, live, live)
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Running = %v, want ErrAlreadyRunning", err)
	}
	for _, want := range []string{"from " + live, "since 2026-11-24T09:00:00Z", "1 of 2 components up", "--state-dir " + live + " down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
