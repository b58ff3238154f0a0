package sloconfigmap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// The last good values survive a restart in a companion ConfigMap the loader owns, next to the SLO ConfigMap and
// named after it (LastGoodName):
//
//	apiVersion: v1
//	kind: ConfigMap
//	metadata:
//	  name: slo-controller-config-last-good
//	  namespace: gleaner-system
//	  labels: {app.kubernetes.io/managed-by: gleaner-manager}
//	  annotations:
//	    last-good.gleaner.sh/colocation-config: '{"resourceVersion":"4711","acceptedAt":"2026-05-04T10:00:00Z"}'
//	data:
//	  colocation-config: |
//	    {"enable": true, "cpuReclaimThresholdPercent": 60}
//
// Its data mirror the text in force of every key whose value came from the SLO ConfigMap (sloconfig.KeyStatus
// AppliedText: the current value, or the last good one while the current one is rejected); a key at its defaults is
// not there. It is written only after the Store accepted a value (or a key went back to its defaults because it was
// removed), so a rejected value never reaches it, and a restarted manager is in the state it was in before. The
// annotation of each key says which version of the SLO ConfigMap (its resourceVersion) the value was accepted from,
// and when. The loader reads it once, before its first Apply, and hands the values to Store.Restore.

// lastGoodSuffix makes the companion's name from the SLO ConfigMap's.
const lastGoodSuffix = "-last-good"

// AnnotationLastGoodPrefix prefixes, on the companion ConfigMap, the annotation of each saved key: its value is
// {"resourceVersion": ..., "acceptedAt": ...}, from which version of the SLO ConfigMap and when the value was
// accepted.
const AnnotationLastGoodPrefix = "last-good.gleaner.sh/"

// LastGoodName is the companion ConfigMap in which the loader saves the last good values of configMap's keys: in the
// same namespace, named configMap's name + "-last-good" (slo-controller-config-last-good). The manager's Role names
// it, so renaming the SLO ConfigMap (--slo-config-name) means renaming it there too.
func LastGoodName(configMap types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: configMap.Namespace, Name: configMap.Name + lastGoodSuffix}
}

// savedKey is one key as saved in the companion.
type savedKey struct {
	value    string
	accepted acceptance
}

// acceptance is a saved key's annotation.
type acceptance struct {
	// ResourceVersion is the SLO ConfigMap's resourceVersion when the value was accepted; empty when unknown.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// AcceptedAt is when the loader accepted it; zero when unknown.
	AcceptedAt metav1.Time `json:"acceptedAt,omitzero"`
}

// String says where a value came from, for events: "accepted from resourceVersion 4711 at 2026-05-04T10:00:00Z".
func (a acceptance) String() string {
	var parts []string
	if a.ResourceVersion != "" {
		parts = append(parts, "from resourceVersion "+a.ResourceVersion)
	}
	if !a.AcceptedAt.IsZero() {
		parts = append(parts, "at "+a.AcceptedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if len(parts) == 0 {
		return "accepted before"
	}
	return "accepted " + strings.Join(parts, " ")
}

// decodeLastGood reads the companion. It never fails as a whole: what cannot be read is reported in problems and
// left out (a value) or left unknown (an annotation).
func decodeLastGood(cm *corev1.ConfigMap) (saved map[string]savedKey, problems []error) {
	saved = map[string]savedKey{}
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		s := savedKey{value: cm.Data[k]}
		if raw, ok := cm.Annotations[AnnotationLastGoodPrefix+k]; ok {
			if err := json.Unmarshal([]byte(raw), &s.accepted); err != nil {
				problems = append(problems, fmt.Errorf("annotation %s%s is not {\"resourceVersion\": ..., \"acceptedAt\": ...}: %w", AnnotationLastGoodPrefix, k, err))
				s.accepted = acceptance{}
			}
		}
		saved[k] = s
	}
	if len(cm.BinaryData) > 0 {
		problems = append(problems, fmt.Errorf("binaryData keys %s are not read", strings.Join(slices.Sorted(maps.Keys(cm.BinaryData)), ", ")))
	}
	return saved, problems
}

// loadLastGood reads the companion and restores its values into the Store, before the first Apply. A companion that
// is missing restores nothing; one that is corrupted in part restores the rest, and one the manager may not read
// restores nothing: each with a Warning event naming what is lost. It fails only on an error worth retrying (the API
// server not answering): applying the ConfigMap without the saved values could put a rejected key at its defaults.
func (c *Controller) loadLastGood(ctx context.Context, regarding *corev1.ConfigMap) error {
	logger := log.FromContext(ctx)
	name := LastGoodName(c.configMap)
	obj := &corev1.ConfigMap{}
	err := c.reader.Get(ctx, name, obj)
	switch {
	case apierrors.IsNotFound(err):
		logger.Info("no last good values saved yet", "configMap", name)
		c.saved = map[string]savedKey{}
		return nil
	case apierrors.IsForbidden(err):
		c.warn(ctx, regarding, ReasonLastGoodUnusable, fmt.Sprintf("cannot read %s, where the last good values are kept: %v; starting without them: a key "+
			"whose value in the ConfigMap is rejected is at its defaults (grant the manager get on that ConfigMap)", name, err))
		c.saved = map[string]savedKey{}
		return nil
	case err != nil:
		return fmt.Errorf("reading the last good values from ConfigMap %s: %w", name, err)
	}
	saved, problems := decodeLastGood(obj)
	values := map[string]string{}
	for k, s := range saved {
		values[k] = s.value
	}
	if err := c.store.Restore(values); err != nil {
		problems = append(problems, err)
	}
	c.saved = saved
	restored := make([]string, 0, len(saved))
	for _, k := range slices.Sorted(maps.Keys(saved)) {
		restored = append(restored, fmt.Sprintf("%s (%s)", k, saved[k].accepted))
	}
	logger.Info("loaded the last good values", "configMap", name, "keys", restored)
	if len(problems) > 0 {
		c.warn(ctx, regarding, ReasonLastGoodUnusable, fmt.Sprintf("%s, where the last good values are kept, is partly unusable: %v; "+
			"the keys named have no last good value (the ConfigMap's value, or else the defaults, apply), and it is rewritten at the next accepted change",
			name, errors.Join(problems...)))
	}
	return nil
}

// saveLastGood brings the companion in line with the snapshot in force: the text in force of every key whose value
// came from the SLO ConfigMap cm (nil when it does not exist), a new key stamped with cm's resourceVersion and the
// clock's time. It writes only when that differs from what was saved, so a reconcile that changed nothing costs
// nothing.
func (c *Controller) saveLastGood(ctx context.Context, snap *sloconfig.Snapshot, cm *corev1.ConfigMap) error {
	want := map[string]savedKey{}
	for _, st := range snap.KeyStatuses() {
		text := st.AppliedText()
		if st.Source == sloconfig.SourceDefault {
			continue
		}
		if old, ok := c.saved[st.Key]; ok && old.value == text {
			want[st.Key] = old
			continue
		}
		a := acceptance{AcceptedAt: metav1.NewTime(c.clock.Now().Truncate(time.Second))}
		if cm != nil {
			a.ResourceVersion = cm.ResourceVersion
		}
		want[st.Key] = savedKey{value: text, accepted: a}
	}
	if maps.Equal(want, c.saved) {
		return nil
	}
	name := LastGoodName(c.configMap)
	obj := &corev1.ConfigMap{}
	err := c.reader.Get(ctx, name, obj)
	switch {
	case apierrors.IsNotFound(err):
		if len(want) == 0 {
			c.saved = want
			return nil
		}
		obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}}
		fillLastGood(obj, want)
		if err := c.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating ConfigMap %s with the last good values: %w", name, err)
		}
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s to save the last good values: %w", name, err)
	default:
		fillLastGood(obj, want)
		// Update carries the resourceVersion just read: a concurrent edit is a conflict, retried, not overwritten blind.
		if err := c.client.Update(ctx, obj); err != nil {
			return fmt.Errorf("saving the last good values in ConfigMap %s: %w", name, err)
		}
	}
	log.FromContext(ctx).V(1).Info("saved the last good values", "configMap", name, "keys", slices.Sorted(maps.Keys(want)))
	c.saved = want
	return nil
}

// fillLastGood sets obj's data and annotations to saved, keeping annotations and labels that are not the loader's.
func fillLastGood(obj *corev1.ConfigMap, saved map[string]savedKey) {
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["app.kubernetes.io/managed-by"] = "gleaner-manager"
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	for k := range obj.Annotations {
		if strings.HasPrefix(k, AnnotationLastGoodPrefix) {
			delete(obj.Annotations, k)
		}
	}
	obj.Data, obj.BinaryData = map[string]string{}, nil
	for k, s := range saved {
		obj.Data[k] = s.value
		b, _ := json.Marshal(s.accepted) // a string and a time: cannot fail
		obj.Annotations[AnnotationLastGoodPrefix+k] = string(b)
	}
}

// lastGoodSummary names the keys running on a last good value, with where each value came from; "" when none does.
func (c *Controller) lastGoodSummary(snap *sloconfig.Snapshot) string {
	var keys []string
	for _, st := range snap.KeyStatuses() {
		if st.Source != sloconfig.SourceLastGood {
			continue
		}
		desc := st.Key
		if s, ok := c.saved[st.Key]; ok && s.value == st.AppliedText() {
			desc += " (" + s.accepted.String() + ")"
		}
		keys = append(keys, desc)
	}
	return strings.Join(keys, ", ")
}
