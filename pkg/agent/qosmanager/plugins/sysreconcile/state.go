package sysreconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// The state file records the values the plugin replaced, by file relative to the host root:
//
//	{"originals": {"proc/sys/vm/min_free_kbytes": "67584", "proc/sys/vm/watermark_scale_factor": "10"}}

// StateFile is the state file's name under Deps.StateDir.
const StateFile = "sysreconcile.json"

// record is what the state file holds.
type record struct {
	// Originals are the values the files held before the plugin first changed them.
	Originals map[string]string `json:"originals"`
}

// parseRecord reads a state file. It refuses files the plugin does not manage: restoring writes every recorded
// value back, and the plugin writes no host file but its own.
func parseRecord(r io.Reader) (*record, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	rec := &record{}
	if err := dec.Decode(rec); err != nil {
		return nil, err
	}
	if rec.Originals == nil {
		rec.Originals = map[string]string{}
	}
	var unknown []string
	for f := range rec.Originals {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.file == f }) {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("it names files this plugin does not manage: %s", strings.Join(unknown, ", "))
	}
	return rec, nil
}

// loadRecord reads the state file in dir; a missing file is an empty record.
func loadRecord(dir string) (*record, error) {
	path := filepath.Join(dir, StateFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &record{Originals: map[string]string{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kernel values sysreconcile replaced: %w", err)
	}
	defer f.Close()
	rec, err := parseRecord(f)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel values sysreconcile replaced from %s: %w (nothing is written while the file "+
			"is unreadable; moving it away starts afresh and forgets the values it holds)", path, err)
	}
	return rec, nil
}

// saveRecord replaces the state file in dir atomically (qosmanager.WriteStateFile), creating dir.
func saveRecord(dir string, rec *record) error {
	if err := qosmanager.WriteStateJSON(dir, StateFile, rec); err != nil {
		return fmt.Errorf("recording the kernel values sysreconcile replaced: %w", err)
	}
	return nil
}
