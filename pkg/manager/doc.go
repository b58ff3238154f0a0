// Package manager assembles gleaner-manager: its Options (filled from flags once in cmd/gleaner-manager), the
// controller-runtime manager with leader election, health probes and Prometheus metrics, the SLO config loader
// (package sloconfigmap, always on: the controllers read what it loads), and the list of controllers --controllers
// chooses from (controllers.go).
package manager
