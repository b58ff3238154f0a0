// Package colocation measures what colocation costs a latency-sensitive service and what it gives batch work: an
// open-loop load generator that times every request from its due time (no coordinated omission), latency
// percentiles, the node's CPU use by class from /proc/stat and the classes' cgroups, and a report of phases as
// ratios to the service alone, as JSON, a table and an SVG picture. make bench-colocation drives it on the real
// local node (test/e2e's BenchmarkColocation); the arithmetic is tested here against known inputs.
package colocation
