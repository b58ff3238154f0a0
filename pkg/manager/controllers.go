package manager

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeallocation"
)

// Controller is one controller of gleaner-manager.
type Controller interface {
	// Name is the controller's name, as logs, metrics and the --controllers flag know it.
	Name() string
	// SetupWithManager registers the controller's watches, indexes and reconciler with mgr. It is called once, before
	// mgr starts; an error stops gleaner-manager from starting.
	SetupWithManager(mgr ctrl.Manager) error
}

// Deps are what the controllers share, built once by New. Constructors only keep what they are given: they run
// for flag validation too, with zero Deps.
type Deps struct {
	// Options are the manager's options.
	Options *Options
	// Clock is the time source of every controller; tests pass a fake one.
	Clock clock.WithTicker
}

// controllers returns every controller gleaner-manager has, in the order they are set up. Adding a controller is
// one line here.
func controllers(d Deps) []Controller {
	return []Controller{
		nodeallocation.New(nodeallocation.Config{Clock: d.Clock}),
	}
}

// controllerNames lists the names of all controllers, for flag validation.
func controllerNames() []string {
	var names []string
	for _, c := range controllers(Deps{}) {
		names = append(names, c.Name())
	}
	return names
}
