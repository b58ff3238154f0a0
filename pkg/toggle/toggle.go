// Package toggle interprets the on/off selections of gleaner's list flags (--controllers, --noderesource-plugins):
// "*" turns every item on, "name" turns one on, "-name" turns one off. An explicit name wins over "*", whatever the
// order, so "-mid,*" and "*,-mid" both mean "everything but mid".
package toggle

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Enabled reports whether selection turns the named item on.
func Enabled(selection []string, name string) bool {
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

// Validate reports every entry of selection that names no known item; flag is the flag's name, for the message.
func Validate(flag string, selection, known []string) error {
	var errs []error
	for _, s := range selection {
		name := strings.TrimPrefix(s, "-")
		if name == "*" || slices.Contains(known, name) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: unknown name %q (known: %s)", flag, name, strings.Join(known, ", ")))
	}
	return errors.Join(errs...)
}
