package sloconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// Store is the one shared, versioned copy of slo-controller-config in gleaner-manager. Every controller reads it, so
// two controllers never act on two different parses of the ConfigMap:
//
//   - Current returns the Snapshot in force: one immutable value with a Version. Read it once per reconcile.
//   - Snapshot.Colocation, Snapshot.NodeSLOSpec and Snapshot.NodeMetricSpec compute what one node gets.
//   - NodeSource tells a controller which nodes to reconcile when the config changes: only those whose derived
//     strategy differs between the snapshot it last saw and the new one (see NodeSource).
//
// Exactly one writer, gleaner-manager's config loader (package sloconfigmap), calls Restore once with the last good
// values it saved before a restart, then Apply with every version of the ConfigMap it sees. A Store's zero value is
// not usable; call NewStore.
type Store struct {
	mu          sync.Mutex // serializes Apply and Restore, and guards subscribers and restored
	current     atomic.Pointer[Snapshot]
	subscribers map[chan struct{}]struct{}
	// restored holds the last good values Restore loaded, as the snapshot the first Apply starts from; nil after it.
	restored *Snapshot
}

// NewStore returns a Store with no snapshot yet: Current is nil until the first Apply.
func NewStore() *Store {
	return &Store{subscribers: map[chan struct{}]struct{}{}}
}

// Current returns the snapshot in force, or nil before the ConfigMap (or its absence) has been observed once. A
// controller that gets nil must do nothing and wait: the first Apply is a change that NodeSource delivers for every
// node. Acting on defaults before the first load would, for a moment, undo what the cluster is configured to do.
func (s *Store) Current() *Snapshot { return s.current.Load() }

// Subscribe returns a channel that receives after every newly published snapshot, and a function that ends the
// subscription. Notifications coalesce (at most one is pending), so a slow reader is never behind by more than one
// wake-up and always reads the newest snapshot with Current. When a snapshot already exists, one notification is
// pending from the start.
func (s *Store) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subscribers[ch] = struct{}{}
	if s.current.Load() != nil {
		ch <- struct{}{}
	}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subscribers, ch)
		s.mu.Unlock()
	}
}

// Restore loads the last good values of the keys, as saved before the process started (by key: the text of a value
// the ConfigMap once had and Apply accepted), so that the first Apply falls back on them instead of on the defaults:
// after a restart, a key whose value in the ConfigMap is now rejected keeps its last good value (SourceLastGood),
// just as it would have without the restart. A saved value is only a fallback: a key valid in the ConfigMap applies
// as usual, and an absent key is at its defaults.
//
// Each saved value is parsed and validated again; one that no longer passes (edited by hand, or written by a version
// with looser checks) is left out, and the returned error joins a *KeyError for each such key and for each name that
// is not a key of Keys(). The others are restored either way. Restore must be called before the first Apply: after
// it, it changes nothing and returns an error.
func (s *Store) Restore(lastGood map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current.Load() != nil {
		return errors.New("restoring last good values: the config is already loaded; restore before the first Apply")
	}
	var errs []error
	for _, k := range unknownKeys(lastGood) {
		errs = append(errs, &KeyError{Key: k, Err: fmt.Errorf("not a key of the config (known keys: %s)", strings.Join(Keys(), ", "))})
	}
	base := &Snapshot{values: map[string]any{}, keys: map[string]KeyStatus{}}
	for _, def := range keyDefs() {
		raw, ok := lastGood[def.name]
		if ok {
			value, findings, err := def.parse(strings.NewReader(raw))
			if err == nil {
				base.values[def.name] = value
				base.keys[def.name] = KeyStatus{Key: def.name, Source: SourceConfigMap, Findings: findings, applied: raw}
				continue
			}
			errs = append(errs, &KeyError{Key: def.name, Err: err})
		}
		base.values[def.name], base.keys[def.name] = def.defaults(), KeyStatus{Key: def.name, Source: SourceDefault}
	}
	s.restored = base
	return errors.Join(errs...)
}

// ApplyResult is what one Apply did.
type ApplyResult struct {
	// Previous is the snapshot before the call; nil at the first one.
	Previous *Snapshot
	// Current is the snapshot in force after the call: a new one when Changed, else Previous.
	Current *Snapshot
	// Changed says whether a new snapshot was published.
	Changed bool
}

// Apply parses a version of the ConfigMap (nil when it does not exist) and publishes a new snapshot when a key's
// value or status changed. Per key:
//
//   - absent (or no ConfigMap): the defaults are in force;
//   - valid: its value is in force;
//   - malformed or invalid: the value in force before stays (the last good one, or the defaults when there was
//     none) and the key's status carries the error.
//
// A key whose text is the same as in the current snapshot is not parsed again. The first Apply starts from the
// values Restore loaded, if any: the last good values of before the process started. Apply never fails.
func (s *Store) Apply(cm *corev1.ConfigMap) ApplyResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.current.Load()
	base := prev
	if base == nil {
		base, s.restored = s.restored, nil
	}
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	next := &Snapshot{values: map[string]any{}, keys: map[string]KeyStatus{}, unknownKeys: unknownKeys(data)}
	changed := prev == nil || !slices.Equal(prev.unknownKeys, next.unknownKeys)
	for _, def := range keyDefs() {
		v, st := applyKey(def, data, base)
		next.values[def.name], next.keys[def.name] = v, st
		if prev == nil || prev.values[def.name] != v || !sameKeyStatus(prev.keys[def.name], st) {
			changed = true
		}
	}
	if !changed {
		return ApplyResult{Previous: prev, Current: prev}
	}
	if prev != nil {
		next.version = prev.version + 1
	} else {
		next.version = 1
	}
	s.current.Store(next)
	for ch := range s.subscribers {
		select {
		case ch <- struct{}{}:
		default: // one notification is already pending
		}
	}
	return ApplyResult{Previous: prev, Current: next, Changed: true}
}

// applyKey decides the value and status of one key given the ConfigMap's data and the previous snapshot.
func applyKey(def keyDef, data map[string]string, prev *Snapshot) (any, KeyStatus) {
	raw, present := data[def.name]
	var old KeyStatus
	var oldValue any
	if prev != nil {
		old, oldValue = prev.keys[def.name], prev.values[def.name]
	}
	switch {
	case !present:
		if prev != nil && old.Source == SourceDefault && old.Err == nil {
			return oldValue, old
		}
		return def.defaults(), KeyStatus{Key: def.name, Source: SourceDefault}
	case prev != nil && old.Err != nil && old.rejected == raw:
		return oldValue, old
	case prev != nil && old.Source != SourceDefault && old.applied == raw:
		// Unchanged, or back to the value still in force after a rejected edit.
		return oldValue, KeyStatus{Key: def.name, Source: SourceConfigMap, Findings: old.Findings, applied: raw}
	}
	value, findings, err := def.parse(strings.NewReader(raw))
	if err == nil {
		return value, KeyStatus{Key: def.name, Source: SourceConfigMap, Findings: findings, applied: raw}
	}
	st := KeyStatus{Key: def.name, Err: &KeyError{Key: def.name, Err: err}, rejected: raw}
	if prev == nil || old.Source == SourceDefault {
		st.Source = SourceDefault
		if oldValue == nil {
			oldValue = def.defaults()
		}
		return oldValue, st
	}
	st.Source, st.Findings, st.applied = SourceLastGood, old.Findings, old.applied
	return oldValue, st
}

func unknownKeys(data map[string]string) []string {
	known := Keys()
	var out []string
	for k := range data {
		if !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Event reasons of the notices about the ConfigMap.
const (
	// ReasonInvalid: a key was rejected; the message names the key and the error.
	ReasonInvalid = "InvalidSLOConfig"
	// ReasonFieldWarnings: a key applied, but with unknown fields, names matched ignoring case or repeated fields.
	ReasonFieldWarnings = "SLOConfigFieldWarnings"
	// ReasonRecovered: a key that was rejected is valid again and in force.
	ReasonRecovered = "SLOConfigKeyRecovered"
	// ReasonApplied: a new version of the config is in force.
	ReasonApplied = "SLOConfigApplied"
)

// Notice is something about the config worth telling whoever reads the ConfigMap's events.
type Notice struct {
	// Key is the ConfigMap key the notice is about; empty for the whole config.
	Key string
	// Warning makes it a Warning event; otherwise Normal.
	Warning bool
	// Reason is one of the Reason constants.
	Reason string
	// Message names the key and says what happened.
	Message string
}

// Notices returns what changed between Previous and Current that a user should hear about: each newly rejected key
// (with the same message the admission webhook gives), each key valid again, the field warnings of each newly
// applied value, unknown keys, and which keys a new version changed.
func (r ApplyResult) Notices() []Notice {
	if !r.Changed {
		return nil
	}
	var out []Notice
	var changedKeys []string
	for _, k := range Keys() {
		cur := r.Current.keys[k]
		var old KeyStatus
		if r.Previous != nil {
			old = r.Previous.keys[k]
		}
		switch {
		case cur.Err != nil && (old.Err == nil || old.rejected != cur.rejected):
			keeps := "keeping the last good value"
			if cur.Source == SourceDefault {
				keeps = "using the defaults until it is fixed"
			}
			out = append(out, Notice{Key: k, Warning: true, Reason: ReasonInvalid, Message: cur.Err.Error() + "; " + keeps})
		case cur.Err == nil && old.Err != nil:
			out = append(out, Notice{Key: k, Reason: ReasonRecovered, Message: k + ": valid again; its error is cleared"})
		}
		if cur.Source == SourceConfigMap && cur.applied != old.applied && len(cur.Findings) > 0 {
			notes := make([]string, len(cur.Findings))
			for i, f := range cur.Findings {
				notes[i] = f.String()
			}
			out = append(out, Notice{Key: k, Warning: true, Reason: ReasonFieldWarnings, Message: k + ": " + strings.Join(notes, "; ")})
		}
		if r.Previous == nil || r.Previous.values[k] != r.Current.values[k] {
			changedKeys = append(changedKeys, fmt.Sprintf("%s (%s)", k, cur.Source))
		}
	}
	if len(r.Current.unknownKeys) > 0 && (r.Previous == nil || !slices.Equal(r.Previous.unknownKeys, r.Current.unknownKeys)) {
		out = append(out, Notice{Warning: true, Reason: ReasonFieldWarnings, Message: fmt.Sprintf(
			"unknown keys ignored: %s (known keys: %s)", strings.Join(r.Current.unknownKeys, ", "), strings.Join(Keys(), ", "))})
	}
	if len(changedKeys) > 0 {
		out = append(out, Notice{Reason: ReasonApplied, Message: fmt.Sprintf("version %d in force; changed: %s",
			r.Current.version, strings.Join(changedKeys, ", "))})
	}
	return out
}
