package cgreconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// The state file records the cgroup files that hold a value the plugin wrote and has not given back yet, by cgroup
// directory relative to the hierarchy root:
//
//	{"held": {"kubepods/burstable": ["memory.min"], "kubepods/burstable/pod0a...": ["memory.min", "memory.oom.group"]}}
//
// At start the plugin takes over exactly these, so that a class turned off while the agent was down is cleaned
// up, and a value it never wrote (the kubelet's MemoryQoS feature gate writes the same files) is never touched.

// StateFile is the state file's name under Deps.StateDir.
const StateFile = "cgreconcile.json"

// record is what the state file holds.
type record struct {
	// Held are the files the plugin holds, by cgroup directory.
	Held map[string][]executor.Resource `json:"held"`
}

// resources are the files the plugin writes.
var resources = []executor.Resource{
	executor.ResourceMemoryMin, executor.ResourceMemoryLow, executor.ResourceMemoryHigh, executor.ResourceMemoryOOMGroup,
}

// parseRecord reads a state file. It refuses files and cgroups the plugin does not write (anything but its four
// memory files, a directory outside kubepods): giving a value back writes the kernel's default there.
func parseRecord(r io.Reader, kubepods string) (*record, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	rec := &record{}
	if err := dec.Decode(rec); err != nil {
		return nil, err
	}
	if rec.Held == nil {
		rec.Held = map[string][]executor.Resource{}
	}
	var bad []string
	for _, dir := range slices.Sorted(maps.Keys(rec.Held)) {
		if path.Clean(dir) != dir || (dir != kubepods && !strings.HasPrefix(dir, kubepods+"/")) {
			bad = append(bad, fmt.Sprintf("%q is not a cgroup under %s", dir, kubepods))
			continue
		}
		for _, r := range rec.Held[dir] {
			if !slices.Contains(resources, r) {
				bad = append(bad, fmt.Sprintf("%q of %s is not a file this plugin writes", r, dir))
			}
		}
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	return rec, nil
}

// loadRecord reads the state file in dir; a missing file is an empty record (the plugin never wrote on this node).
func loadRecord(dir, kubepods string) (*record, error) {
	path := filepath.Join(dir, StateFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &record{Held: map[string][]executor.Resource{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the memory QoS values cgreconcile holds: %w", err)
	}
	defer f.Close()
	rec, err := parseRecord(f, kubepods)
	if err != nil {
		return nil, fmt.Errorf("reading the memory QoS values cgreconcile holds from %s: %w (nothing is written while the "+
			"file is unreadable; moving it away starts afresh, and the values it names are then left as they are)", path, err)
	}
	return rec, nil
}

// saveRecord replaces the state file in dir atomically, creating dir.
func saveRecord(dir string, rec *record) error {
	if err := qosmanager.WriteStateJSON(dir, StateFile, rec); err != nil {
		return fmt.Errorf("recording the memory QoS values cgreconcile holds: %w", err)
	}
	return nil
}
