package qosmanager

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// What the eviction plugins (memory, CPU satisfaction) share: the order in which they pick pods, and the memory of
// the pods they already asked to evict, so that a pod on its way out is counted as gone and not replaced by another
// eviction.

// Candidate is a pod an eviction plugin may evict (best-effort or mid-tier, slov1alpha1.PodClass.Evictable), with
// the usage that ranks it.
type Candidate struct {
	// Meta is the pod.
	Meta *statesinformer.PodMeta
	// Usage is what the pod uses of the resource the plugin frees, in that resource's unit.
	Usage float64
}

// SortForEviction orders candidates in the order they are evicted: every best-effort pod before any mid-tier pod,
// then lowest eviction priority first (the pod's annotation, EvictionPriority), then lowest spec.priority (free
// before batch; a pod without a priority counts as 0, the API's default), then largest Usage, then namespace/name
// so that the order does not depend on the order of the input. A candidate whose eviction-priority annotation is
// malformed is said through bad (which may be nil) and sorted as 0.
func SortForEviction(ctx context.Context, c []Candidate, bad *Warnings) {
	if bad != nil {
		for _, x := range c {
			if _, err := EvictionPriority(x.Meta.Pod); err != nil {
				bad.Warn(ctx, x.Meta.Pod, evictionPriorityValue(x.Meta.Pod), err, "it is evicted as if it had eviction priority 0")
			} else {
				bad.Fine(x.Meta.Pod)
			}
		}
	}
	slices.SortStableFunc(c, func(a, b Candidate) int {
		if d := cmp.Compare(tierRank(a.Meta), tierRank(b.Meta)); d != 0 {
			return d
		}
		ea, _ := EvictionPriority(a.Meta.Pod)
		eb, _ := EvictionPriority(b.Meta.Pod)
		if d := cmp.Compare(ea, eb); d != 0 {
			return d
		}
		if d := cmp.Compare(priority(a.Meta), priority(b.Meta)); d != 0 {
			return d
		}
		if d := cmp.Compare(b.Usage, a.Usage); d != 0 {
			return d
		}
		return cmp.Compare(a.Meta.Key(), b.Meta.Key())
	})
}

// tierRank is 0 for a best-effort pod and 1 for a mid-tier one: the mid tier goes only after best-effort work.
func tierRank(m *statesinformer.PodMeta) int {
	if m.Mid {
		return 1
	}
	return 0
}

// Tier names the tier of a pod the plugins may evict, for logs: "mid" or "best-effort".
func Tier(m *statesinformer.PodMeta) string {
	if m.Mid {
		return "mid"
	}
	return "best-effort"
}

// EvictionPriority is the eviction priority pod's annotations ask for among the pods of its tier: gleaner.sh's
// annotation, else Koordinator's, an int32, lower evicted first; 0 without one. A value that is not an int32 is an
// error naming the annotation, and counts as 0.
func EvictionPriority(pod *corev1.Pod) (int32, error) {
	for _, k := range []string{slov1alpha1.AnnotationEvictionPriority, slov1alpha1.AnnotationEvictionPriorityAlias} {
		v, ok := pod.Annotations[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("annotation %s: %q is not an integer from %d to %d", k, v, math.MinInt32, math.MaxInt32)
		}
		return int32(n), nil
	}
	return 0, nil
}

// evictionPriorityValue is the eviction-priority annotation EvictionPriority reads, as written.
func evictionPriorityValue(pod *corev1.Pod) string {
	if v, ok := pod.Annotations[slov1alpha1.AnnotationEvictionPriority]; ok {
		return v
	}
	return pod.Annotations[slov1alpha1.AnnotationEvictionPriorityAlias]
}

// ReasonBadEvictionPriority is the reason of the Warning event on a pod whose eviction priority is malformed.
const ReasonBadEvictionPriority = "InvalidEvictionPriority"

// UnderPriorityThreshold reports whether m's spec.priority (0 when unset) is at most threshold; a nil threshold
// takes every pod (evictEnabledPriorityThreshold, allocatableEvictPriorityThreshold).
func UnderPriorityThreshold(m *statesinformer.PodMeta, threshold *int64) bool {
	return threshold == nil || int64(priority(m)) <= *threshold
}

func priority(m *statesinformer.PodMeta) int32 {
	if p := m.Pod.Spec.Priority; p != nil {
		return *p
	}
	return 0
}

// Evictions remembers which pods a plugin asked to evict, so that the plugin counts a pod on its way out as gone
// instead of evicting another one in its place. It is not safe for concurrent use (a plugin's Run never runs
// concurrently with itself).
type Evictions struct {
	settle    time.Duration
	requested map[types.UID]time.Time
}

// NewEvictions returns an empty Evictions that counts a pod as going for settle after its eviction was requested,
// and for settle after its deletion time when it is terminating.
func NewEvictions(settle time.Duration) *Evictions {
	return &Evictions{settle: settle, requested: map[types.UID]time.Time{}}
}

// Requested records that the eviction of the pod uid was requested (accepted by the Evictor) at now.
func (e *Evictions) Requested(uid types.UID, now time.Time) { e.requested[uid] = now }

// Going reports whether the pod is on its way out at now: its eviction was requested less than settle ago, or it
// is terminating (whoever deleted it) and its deletion time, which includes its grace period, is less than settle
// ago. A pod still there after that counts again, so a pod stuck terminating is replaced.
func (e *Evictions) Going(m *statesinformer.PodMeta, now time.Time) bool {
	if t, ok := e.requested[m.Pod.UID]; ok && now.Sub(t) < e.settle {
		return true
	}
	if d := m.Pod.DeletionTimestamp; d != nil && now.Sub(d.Time) < e.settle {
		return true
	}
	return false
}

// Prune forgets requests made settle or longer before now.
func (e *Evictions) Prune(now time.Time) {
	for uid, t := range e.requested {
		if now.Sub(t) >= e.settle {
			delete(e.requested, uid)
		}
	}
}

// Len is the number of requests remembered.
func (e *Evictions) Len() int { return len(e.requested) }
