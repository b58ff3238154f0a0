package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// State is the record of a cluster Up started, kept in cluster.json so that Down, Status and a second Up (from
// another process) know what runs.
type State struct {
	// StartedAt is when Up began.
	StartedAt time.Time `json:"startedAt"`
	// Processes are the components Up started, in start order.
	Processes []Process `json:"processes"`
	// CreatedHostPaths are the paths outside the state directory that did not exist before Up; Down removes the
	// ones that exist then.
	CreatedHostPaths []string `json:"createdHostPaths"`
	// IPForward is net.ipv4.ip_forward before Up ("0" or "1"); Down writes it back (the CNI bridge turns it on).
	IPForward string `json:"ipForward,omitempty"`
	// Firewall is the iptables ruleset of each family before Up; Down removes the Kubernetes and CNI chains added
	// since and the rules that jump to them (firewall.go). Nil when it could not be read: Down then leaves the
	// firewall alone.
	Firewall Ruleset `json:"firewall,omitempty"`
}

// errNoState means there is no cluster.json: no cluster was started from this state directory, or it was torn down.
var errNoState = errors.New("no local cluster state")

// readState reads cluster.json.
func readState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoState
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parsing the cluster state %s (remove it and run down to clean up by sweeping): %w", path, err)
	}
	return &s, nil
}

// write stores the state atomically, so a reader never sees half of it.
func (s *State) write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the cluster state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the cluster state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the cluster state: %w", err)
	}
	return nil
}

// alive returns the recorded processes that still run.
func (s *State) alive() []Process {
	var out []Process
	for _, p := range s.Processes {
		if p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// Running returns ErrAlreadyRunning, saying from where and since when, when a cluster started from one of the state
// directories still runs; nil when none does. `gleaner-local check` asks it: the kubelet's ports, the kubepods
// cgroups and /var/lib/kubelet are machine-wide, so a second cluster cannot start beside a running one, whichever
// state directory it uses. A state file that cannot be read counts as no running cluster (Up cleans it up).
func Running(stateDirs ...string) error {
	seen := map[string]bool{}
	for _, dir := range stateDirs {
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		s, err := readState(Layout{Dir: dir}.StateFile())
		if err != nil {
			continue
		}
		if alive := s.alive(); len(alive) > 0 {
			return fmt.Errorf("%w from %s since %s (%d of %d components up); only one runs on a machine at a time: "+
				"`gleaner-local --state-dir %s down` stops it", ErrAlreadyRunning, dir, s.StartedAt.Format(time.RFC3339),
				len(alive), len(s.Processes), dir)
		}
	}
	return nil
}
