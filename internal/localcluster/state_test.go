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
