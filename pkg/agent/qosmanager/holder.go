package qosmanager

import (
	"context"
	"fmt"
	"slices"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
)

// Holder keeps a plugin's cgroup values in force through the executor and gives back what the plugin no longer
// wants: a value it held that is left out of the next Sync is written back to the kernel's default, then released
// (executor.Release), so that the executor stops asserting it against other writers. It suits plugins that tune
// files nobody else writes by default (cpu.idle, memory.min, ...); a Holder is used from one goroutine.
type Holder struct {
	owner    string
	exec     *executor.Executor
	defaults map[executor.Resource]executor.Value
	held     map[heldKey]bool
}

type heldKey struct {
	dir      string
	resource executor.Resource
}

// NewHolder returns a Holder writing on behalf of owner (the plugin's name). defaults is the kernel's value of
// every resource the plugin writes (what a new cgroup holds); Sync panics on a resource missing there.
func NewHolder(owner string, exec *executor.Executor, defaults ...executor.Value) *Holder {
	h := &Holder{owner: owner, exec: exec, defaults: map[executor.Resource]executor.Value{}, held: map[heldKey]bool{}}
	for _, v := range defaults {
		h.defaults[v.Resource()] = v
	}
	return h
}

// Adopt counts resource r of dir as held: a value found in the kernel that an earlier run of the agent left there,
// which the next Sync gives back unless it wants it.
func (h *Holder) Adopt(dir string, r executor.Resource) { h.held[heldKey{dir, r}] = true }

// Held reports whether resource r of dir is held.
func (h *Holder) Held(dir string, r executor.Resource) bool { return h.held[heldKey{dir, r}] }

// Len is the number of values held.
func (h *Holder) Len() int { return len(h.held) }

// All is every value held, by cgroup directory, each directory's resources sorted: what a plugin records to adopt
// them again after a restart.
func (h *Holder) All() map[string][]executor.Resource {
	all := map[string][]executor.Resource{}
	for k := range h.held {
		all[k.dir] = append(all[k.dir], k.resource)
	}
	for _, rs := range all {
		slices.Sort(rs)
	}
	return all
}

// Sync hands want to the executor in one batch (so that the executor orders it for the hierarchy), together with
// the kernel's default for every held value left out of want whose cgroup live says still exists (nil: all do);
// those of cgroups that are gone are only let go. When the batch succeeds, the values given back are released; when
// a write fails they stay held and the next Sync tries again. reason explains the given-back values in the audit
// trail.
func (h *Holder) Sync(ctx context.Context, reason string, want []executor.Update, live func(dir string) bool) error {
	next := make(map[heldKey]bool, len(want))
	for _, u := range want {
		next[heldKey{u.Dir, u.Value.Resource()}] = true
	}
	batch := want
	var back []heldKey
	for k := range h.held {
		if next[k] {
			continue
		}
		back = append(back, k)
		if live != nil && !live(k.dir) {
			continue
		}
		v, ok := h.defaults[k.resource]
		if !ok {
			panic(fmt.Sprintf("qosmanager: holder of %s has no kernel default for %s", h.owner, k.resource))
		}
		batch = append(batch, executor.Update{Dir: k.dir, Value: v, Reason: reason})
	}
	err := h.exec.Apply(ctx, h.owner, batch...)
	if err != nil {
		for _, k := range back {
			next[k] = true
		}
		h.held = next
		return err
	}
	h.held = next
	byResource := map[executor.Resource]map[string]bool{}
	for _, k := range back {
		if byResource[k.resource] == nil {
			byResource[k.resource] = map[string]bool{}
		}
		byResource[k.resource][k.dir] = true
	}
	for r, dirs := range byResource {
		h.exec.Release(h.owner, r, func(dir string) bool { return dirs[dir] })
	}
	return nil
}
