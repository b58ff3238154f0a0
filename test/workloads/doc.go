// Package workloads holds the programs the local cluster's demo and e2e tests run in pods, one command per
// directory: pause (the pod sandbox), burner (a CPU load), eater (a memory footprint), lsservice (a
// latency-sensitive HTTP service that measures its own latency) and cgroupreport (prints the cgroup values its
// container was created with, at its first instruction). internal/images turns each into an image
// gleaner.local/NAME:dev; a new directory here gets its image with no other change.
package workloads
