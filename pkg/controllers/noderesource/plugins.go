package noderesource

import (
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/plugins/batch"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/plugins/cpunormalization"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/plugins/mid"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/plugins/resourceamplification"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
)

// plugins returns every node-resource plugin in the order they run. Adding a plugin is one line here.
// resourceamplification builds on the ratio cpunormalization returns, so it comes after it.
func plugins() []framework.Plugin {
	return []framework.Plugin{
		batch.New(),
		mid.New(),
		cpunormalization.New(),
		resourceamplification.New(),
	}
}

// PluginNames lists every plugin's name, in order, for flag validation.
func PluginNames() []string {
	var names []string
	for _, p := range plugins() {
		names = append(names, p.Name())
	}
	return names
}

// NewRegistry returns the registry of the plugins selection turns on ("*", "name", "-name").
func NewRegistry(selection []string) (*framework.Registry, error) {
	r, err := framework.NewRegistry(plugins()...)
	if err != nil {
		return nil, err
	}
	return r.Filter(func(name string) bool { return toggle.Enabled(selection, name) }), nil
}
