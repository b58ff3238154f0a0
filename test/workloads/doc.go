// Package workloads holds the programs the local cluster's demo and e2e tests run in pods, one command per
// directory: pause (the pod sandbox), burner (a CPU load), eater (a memory footprint) and lsservice (a
// latency-sensitive HTTP service that measures its own latency). internal/images turns each into an image
// gleaner.local/NAME:dev; a new directory here gets its image with no other change.
package workloads
