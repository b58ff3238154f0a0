package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Controller is one controller of gleaner-manager.
type Controller interface {
	// Name is the controller's name, as logs, metrics and the --controllers flag know it.
	Name() string
	// SetupWithManager registers the controller's watches, indexes and reconciler with mgr. It is called once, before
	// mgr starts; an error stops gleaner-manager from starting.
	SetupWithManager(mgr ctrl.Manager) error
}

// controllers returns every controller gleaner-manager has, in the order they are set up. Adding a controller is
// one line here.
func controllers() []Controller {
	return []Controller{}
}

// controllerNames lists the names of all controllers, for flag validation.
func controllerNames() []string {
	var names []string
	for _, c := range controllers() {
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
