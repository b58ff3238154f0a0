package qosmanager

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// offEnables lists the path of every Enable field under v that is not false (nil counts: a plugin would take its
// default for it).
func offEnables(path string, v reflect.Value) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return offEnables(path, v.Elem())
	case reflect.Struct:
		var on []string
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			if !f.IsExported() {
				continue
			}
			p := path + "." + f.Name
			if f.Name == "Enable" && fv.Type() == reflect.TypeFor[*bool]() {
				if fv.IsNil() || *fv.Interface().(*bool) {
					on = append(on, p)
				}
				continue
			}
			on = append(on, offEnables(p, fv)...)
		}
		return on
	case reflect.Slice:
		var on []string
		for i := range v.Len() {
			on = append(on, offEnables(path, v.Index(i))...)
		}
		return on
	}
	return nil
}

// Every feature of OffSpec is off, whatever the API grows: a new strategy with an Enable field on by default fails
// here until OffSpec turns it off. The defaults leave only class BE's CPU QoS on, so this also checks the walk.
func TestOffSpecTurnsEveryFeatureOff(t *testing.T) {
	if on := offEnables("spec", reflect.ValueOf(OffSpec())); len(on) > 0 {
		t.Errorf("OffSpec leaves on: %s", strings.Join(on, ", "))
	}
	defaults := offEnables("spec", reflect.ValueOf((*slov1alpha1.NodeSLOSpec)(nil).WithDefaults()))
	if len(defaults) != 1 || !strings.HasSuffix(defaults[0], ".BEClass.CPUQOS.Enable") {
		t.Errorf("the defaults leave on %v; want class BE's CPU QoS alone", defaults)
	}
}

// specPlugin records the BE class's CPU QoS switch of each spec it runs with, and can fail.
type specPlugin struct {
	name string
	seen []bool
	err  error
}

func (p *specPlugin) Name() string { return p.name }

func (p *specPlugin) Run(_ context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	p.seen = append(p.seen, *spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable)
	return p.err
}

// Restore runs every plugin once with everything off, though the node's NodeSLO (none: the defaults) has BE's CPU
// QoS on; a failing plugin does not keep the next from running, and its error names it.
func TestRestoreRunsEveryPluginOff(t *testing.T) {
	a, b := &specPlugin{name: "a", err: errors.New("cgroup gone")}, &specPlugin{name: "b"}
	m, err := NewManager(Deps{States: statesinformer.NewStore()}, clocktesting.NewFakeClock(time.Now()), []Factory{
		{Name: "a", Default: true, New: func(Deps) (RunPlugin, error) { return a, nil }},
		{Name: "b", Default: true, New: func(Deps) (RunPlugin, error) { return b, nil }},
	}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(t.Context()); err == nil {
		t.Fatal("RunOnce: plugin a's error is lost")
	}
	err = m.Restore(t.Context())
	if err == nil || !strings.Contains(err.Error(), "QoS plugin a: cgroup gone") {
		t.Errorf("Restore: %v, want plugin a's error", err)
	}
	for _, p := range []*specPlugin{a, b} {
		if !reflect.DeepEqual(p.seen, []bool{true, false}) {
			t.Errorf("plugin %s ran with BE cpuQOS %v; want on (the defaults), then off (Restore)", p.name, p.seen)
		}
	}
}
