// Package collector holds gleaner-agent's metric collectors and the Runner that runs them. Each collector is one
// file, implements Collector, and is listed once in Registry with its name, default interval and whether it runs
// by default; the --collectors flag selects them and --collector-intervals overrides intervals.
//
// Collectors read the host through pkg/agent/system, learn the node's pods from the states informer, and write
// samples into the metric cache (units in metriccache's metric list). They keep only the previous counter values
// they need for rates. A pod whose cgroup cannot be read is skipped for that round without affecting the others;
// pods that ended are dropped at once, and the Runner deletes their series from the cache.
package collector
