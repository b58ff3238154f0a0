// Package manager assembles gleaner-manager: its Options (filled from flags once in cmd/gleaner-manager), the
// controller-runtime manager with leader election, health probes and Prometheus metrics, and the list of
// controllers it runs (controllers.go).
package manager
