// Package prom holds what Gleaner's components need on top of the Prometheus client: registering a collector
// that a second instance of the same component in one process (a test starting several managers) registered
// already.
package prom

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds c to reg and returns it, or returns the collector of the same type already registered under the
// same descriptor, so every instance updates one series set. Any other registration error is returned.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering Prometheus collector: %w", err)
}
