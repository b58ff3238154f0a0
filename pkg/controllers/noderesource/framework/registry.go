package framework

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Registry holds the plugins of one controller in the order they run.
type Registry struct {
	plugins []Plugin
}

// NewRegistry returns a registry running plugins in the given order. Two plugins with one name are an error.
func NewRegistry(plugins ...Plugin) (*Registry, error) {
	seen := map[string]bool{}
	for _, p := range plugins {
		if p.Name() == "" {
			return nil, fmt.Errorf("registering node-resource plugin %T: empty name", p)
		}
		if seen[p.Name()] {
			return nil, fmt.Errorf("registering node-resource plugin %q: a plugin with that name is already registered", p.Name())
		}
		seen[p.Name()] = true
	}
	return &Registry{plugins: plugins}, nil
}

// Plugins returns the plugins in order.
func (r *Registry) Plugins() []Plugin { return r.plugins }

// Names returns the plugin names in order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.plugins))
	for i, p := range r.plugins {
		names[i] = p.Name()
	}
	return names
}

// Filter returns a registry with the plugins for which keep is true, in the same order.
func (r *Registry) Filter(keep func(name string) bool) *Registry {
	var kept []Plugin
	for _, p := range r.plugins {
		if keep(p.Name()) {
			kept = append(kept, p)
		}
	}
	return &Registry{plugins: kept}
}

// Setup runs every SetupPlugin.
func (r *Registry) Setup(opts *SetupOptions) error {
	for _, p := range r.plugins {
		if sp, ok := p.(SetupPlugin); ok {
			if err := sp.Setup(opts); err != nil {
				return fmt.Errorf("setting up node-resource plugin %s: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// Calculate runs every CalculatePlugin, or their Reset with disabledReason when it is not empty, and merges the
// items. A plugin that fails is reset with the error as its reason; the errors are returned joined, after the
// merge, so one plugin's failure never blocks the others' results.
func (r *Registry) Calculate(in *Input, disabledReason string) (*NodeResource, error) {
	nr := NewNodeResource()
	var errs []error
	for _, p := range r.plugins {
		cp, ok := p.(CalculatePlugin)
		if !ok {
			continue
		}
		if disabledReason != "" {
			nr.Set(cp.Reset(in.Node, disabledReason)...)
			continue
		}
		items, err := cp.Calculate(in)
		if err != nil {
			errs = append(errs, fmt.Errorf("node-resource plugin %s: %w", p.Name(), err))
			items = cp.Reset(in.Node, "calculation failed: "+err.Error())
		}
		nr.Set(items...)
	}
	return nr, errors.Join(errs...)
}

// Annotate runs every AnnotatePlugin in order and merges their items into nr. A plugin that fails keeps its
// annotations as they are on the node: its explanation entries say why, and the errors are returned joined.
func (r *Registry) Annotate(in *Input, nr *NodeResource) error {
	var errs []error
	for _, p := range r.plugins {
		ap, ok := p.(AnnotatePlugin)
		if !ok {
			continue
		}
		items, err := ap.Annotate(in, nr)
		if err != nil {
			errs = append(errs, fmt.Errorf("node-resource plugin %s: %w", p.Name(), err))
			for _, it := range items {
				// What a failing plugin returns only names the annotations it keeps as they are.
				nr.AnnotationDerivations = append(nr.AnnotationDerivations, slov1alpha1.AnnotationDerivation{
					Annotation: it.Key, Plugin: p.Name(), Reason: slov1alpha1.AnnotationKeptPrefix + err.Error(),
				})
			}
			continue
		}
		nr.SetAnnotations(p.Name(), items...)
	}
	return errors.Join(errs...)
}

// PreUpdate runs every PreUpdatePlugin once; errors are joined, and every plugin runs.
func (r *Registry) PreUpdate(ctx context.Context, in *Input, nr *NodeResource) error {
	var errs []error
	for _, p := range r.plugins {
		if pp, ok := p.(PreUpdatePlugin); ok {
			if err := pp.PreUpdate(ctx, in, nr); err != nil {
				errs = append(errs, fmt.Errorf("node-resource plugin %s pre-update: %w", p.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// Prepare runs every PreparePlugin on node.
func (r *Registry) Prepare(in *Input, node *corev1.Node, nr *NodeResource) error {
	for _, p := range r.plugins {
		if pp, ok := p.(PreparePlugin); ok {
			if err := pp.Prepare(in, node, nr); err != nil {
				return fmt.Errorf("node-resource plugin %s prepare: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// NeedSync reports whether any NeedSyncPlugin wants the status written, with the first plugin's reason.
func (r *Registry) NeedSync(strategy *sloconfig.ColocationStrategy, oldNode, newNode *corev1.Node) (bool, string) {
	for _, p := range r.plugins {
		if np, ok := p.(NeedSyncPlugin); ok {
			if need, why := np.NeedSync(strategy, oldNode, newNode); need {
				return true, p.Name() + ": " + why
			}
		}
	}
	return false, ""
}
