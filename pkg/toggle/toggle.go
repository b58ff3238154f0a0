// Package toggle interprets the on/off selections of gleaner's list flags (--controllers, --noderesource-plugins,
// the agent's --collectors and --qos-plugins): "*" turns every item on (or every item that is on by default), "name"
// turns one on, "-name" turns one off. An explicit name wins over "*", whatever the order, so "-mid,*" and
// "*,-mid" both mean "everything but mid".
package toggle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Enabled reports whether selection turns the named item on.
func Enabled(selection []string, name string) bool { return EnabledByDefault(selection, name, true) }

// EnabledByDefault reports whether selection turns the named item on, where "*" turns it on only when it is on by
// default (def).
func EnabledByDefault(selection []string, name string, def bool) bool {
	on := false
	for _, s := range selection {
		switch s {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			on = def
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

// ValidateNamed checks the selection and per-name intervals of a list of named items that run periodically: every
// name registered twice, every unknown name in selection (flag) and intervals (intervalFlag), and every
// non-positive interval.
func ValidateNamed(flag, intervalFlag string, names, selection []string, intervals map[string]time.Duration) error {
	var errs []error
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			errs = append(errs, fmt.Errorf("%q is registered twice", n))
		}
	}
	if err := Validate(flag, selection, names); err != nil {
		errs = append(errs, err)
	}
	for _, n := range slices.Sorted(maps.Keys(intervals)) {
		if !slices.Contains(names, n) {
			errs = append(errs, fmt.Errorf("%s: unknown name %q (known: %s)", intervalFlag, n, strings.Join(names, ", ")))
		}
		if i := intervals[n]; i <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s must be positive, got %s", intervalFlag, n, i))
		}
	}
	return errors.Join(errs...)
}
