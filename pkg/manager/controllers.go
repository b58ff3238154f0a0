package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gleaner-sh/gleaner/pkg/controllers/index"
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
	// Indexes are the field indexes the controllers share on the manager's cache, each registered once.
	Indexes *index.Indexes
}

// controllers returns every controller gleaner-manager has, in the order they are set up. Adding a controller is
// one line here.
func controllers(d Deps) []Controller {
	return []Controller{
		nodeallocation.New(nodeallocation.Config{Clock: d.Clock, Indexes: d.Indexes}),
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

// enabled reports whether the --controllers selection turns the named controller on. An explicit "name" or "-name"
// wins over "*".
func enabled(selection []string, name string) bool {
	on := false
	for _, s := range selection {
		switch s {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			on = true
		}
	}
	return on
}

func validateControllerSelection(selection []string) error {
	known := controllerNames()
	var errs []error
	for _, s := range selection {
		name := strings.TrimPrefix(s, "-")
		if name == "*" || slices.Contains(known, name) {
			continue
		}
		errs = append(errs, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(known, ", ")))
	}
	return errors.Join(errs...)
}
