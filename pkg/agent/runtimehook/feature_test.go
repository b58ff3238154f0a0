package runtimehook

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// fakeFeature gives fixed values and records the stages it was asked at.
type fakeFeature struct {
	name     string
	pod, ctr Values
	err      error
	stages   *[]string
}

func (f fakeFeature) Name() string { return f.name }

func (f fakeFeature) ContainerValues(t Target) (Values, error) {
	*f.stages = append(*f.stages, f.name+" container "+t.Stage.String())
	return f.ctr, f.err
}

// podFake is a fakeFeature that also gives pod values.
type podFake struct{ fakeFeature }

func (f podFake) PodValues(t Target) (Values, error) {
	*f.stages = append(*f.stages, f.name+" pod "+t.Stage.String())
	return f.pod, f.err
}

// cpusetEqual compares CPU sets by their CPUs.
var cpusetEqual = cmp.Comparer(func(a, b cpuset.CPUSet) bool { return a.Equals(b) })

// neither implements Feature alone.
type neither struct{}

func (neither) Name() string { return "neither" }

func factory(f Feature) FeatureFactory {
	return FeatureFactory{Name: f.Name(), New: func(Deps) (Feature, error) { return f, nil }}
}

// The registry asks its features in order, and a later feature's field replaces an earlier one's; the NRI plugin
// and the reconciler get the same merged values.
func TestRegistryMergesInOrder(t *testing.T) {
	var stages []string
	first := podFake{fakeFeature{name: "first", stages: &stages,
		pod: Values{CPUShares: 100, MemoryLimit: 1 << 20}, ctr: Values{CPUShares: 10, CPUQuota: quota(50)}}}
	second := fakeFeature{name: "second", stages: &stages, ctr: Values{CPUShares: 20, CPUs: cpuset.New(2, 3)}}
	third := podFake{fakeFeature{name: "third", stages: &stages, pod: Values{MemoryLimit: 2 << 20}}}
	r, err := NewRegistry(Deps{}, []FeatureFactory{factory(first), factory(second), factory(third)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, r.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	m := &statesinformer.PodMeta{Pod: batchPod()}
	pv, err := r.podValues(Target{Stage: StageRunPodSandbox, Pod: m})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Values{CPUShares: 100, MemoryLimit: 2 << 20}); !cmp.Equal(want, pv, cpusetEqual) {
		t.Errorf("pod values = %+v, want %+v", pv, want)
	}
	cv, err := r.containerValues(Target{Stage: StageCreateContainer, Pod: m, Container: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Values{CPUShares: 20, CPUQuota: quota(50), CPUs: cpuset.New(2, 3)}); !cmp.Equal(want, cv, cpusetEqual) {
		t.Errorf("container values = %+v, want %+v", cv, want)
	}
	if diff := cmp.Diff([]string{"first pod RunPodSandbox", "third pod RunPodSandbox",
		"first container CreateContainer", "second container CreateContainer", "third container CreateContainer"}, stages); diff != "" {
		t.Errorf("features asked (-want +got):\n%s", diff)
	}

	third.err = ErrContainerUnknown
	r, err = NewRegistry(Deps{}, []FeatureFactory{factory(first), factory(third)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.containerValues(Target{Stage: StageReconcile, Pod: m, Container: "x"}); !errors.Is(err, ErrContainerUnknown) {
		t.Errorf("a feature's ErrContainerUnknown came back as %v", err)
	}
}

func TestRegistryRefusesBadFeatures(t *testing.T) {
	var stages []string
	a := fakeFeature{name: "a", stages: &stages}
	tests := []struct {
		name      string
		factories []FeatureFactory
		want      string
	}{
		{name: "a name twice", factories: []FeatureFactory{factory(a), factory(fakeFeature{name: "b", stages: &stages}), factory(a)}, want: `feature "a" is registered twice`},
		{name: "another name than its factory's", factories: []FeatureFactory{{Name: "x", New: func(Deps) (Feature, error) { return a, nil }}}, want: `feature "x" calls itself "a"`},
		{name: "neither pod nor container values", factories: []FeatureFactory{factory(neither{})}, want: `feature "neither" gives neither pod nor container values`},
		{name: "a constructor that fails", factories: []FeatureFactory{{Name: "y", New: func(Deps) (Feature, error) { return nil, errors.New("no executor") }}}, want: `feature "y": no executor`},
		{name: "no name", factories: []FeatureFactory{{New: func(Deps) (Feature, error) { return a, nil }}}, want: "without a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRegistry(Deps{}, tt.factories)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewRegistry error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The hook's own registry: the tier resources, the best-effort cpuset, the OOM order; every name once.
func TestFeaturesRegistry(t *testing.T) {
	f := newFixture(t, clock.RealClock{})
	if diff := cmp.Diff([]string{TierFeatureName, CPUSetFeatureName, OOMScoreFeatureName}, f.registry(t).Names()); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
}
