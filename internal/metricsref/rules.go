package metricsref

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The naming rules are Prometheus's (https://prometheus.io/docs/practices/naming/) and OpenMetrics':
//
//   - every name is snake_case and starts with gleaner_, gleaner_agent_ for the agent's alone; labels are
//     snake_case too;
//   - one unit per metric, a base unit, named by the last word (before _total): seconds, bytes, ratio (0..1, not a
//     percent), and cores for CPU held at a moment; no milli-, kilo- or percent units, no rates (_per_second):
//     what accumulates is a counter, and PromQL's rate() makes the rate;
//   - counters, and only counters, end in _total; CPU time that accumulates is _seconds_total, not cores;
//   - _info names an information gauge, _timestamp_seconds a Unix time;
//   - a gauge or histogram without a base unit says what it counts (Unitless), and a label never selects between
//     units: a resource label chooses among resources of the one unit of the name, and there is no unit label;
//   - a name kept one release after its rename (Deprecated) says so first in its help, naming what replaces it.

// baseUnits are the units a name may end in, before _total. cores is not one of Prometheus's base units: it is
// CPU held at one moment (CPU time that accumulates is seconds), as kube-state-metrics names it.
var baseUnits = []string{"seconds", "bytes", "cores", "ratio", "celsius", "volts", "amperes", "joules", "grams", "meters"}

// nonBaseUnits are words of units that are not base units, or of rates.
var nonBaseUnits = map[string]string{
	"millicores": "cores", "milliseconds": "seconds", "microseconds": "seconds", "nanoseconds": "seconds", "ms": "seconds",
	"minutes": "seconds", "hours": "seconds", "days": "seconds", "kilobytes": "bytes", "megabytes": "bytes",
	"gigabytes": "bytes", "kb": "bytes", "mb": "bytes", "gb": "bytes", "kib": "bytes", "mib": "bytes", "gib": "bytes",
	"bits": "bytes", "percent": "ratio", "percentage": "ratio", "pct": "ratio",
}

// Unitless are the gauges with no base unit, and what their value counts or means (docs/metrics.md's unit column).
var Unitless = map[string]string{
	"gleaner_slo_config_version":                 "version number",
	"gleaner_slo_config_key_valid":               "1 or 0",
	"gleaner_slo_config_key_source":              "1 or 0",
	"gleaner_noderesource_degraded":              "1 or 0",
	"gleaner_agent_nodeslo_applied":              "1 or 0",
	"gleaner_agent_runtime_hook_mode":            "1 or 0",
	"gleaner_agent_runtime_hook_reconciled_pods": "pods",
	"gleaner_agent_metric_cache_series":          "series",
	"gleaner_agent_cpi_containers":               "containers",
	// Cycles per instruction is a quotient of two counts, not a share of a whole (_ratio is 0..1).
	"gleaner_agent_container_cpi": "cycles per instruction",
	"gleaner_agent_qos_cpi":       "cycles per instruction",
	// Extended resources are integer counts, by Kubernetes's rule; those that are not (Gleaner's batch and mid CPU
	// and memory) are in the _cpu_cores and _bytes families.
	"gleaner_node_allocated_requests_extended": "the resource's integer units",
	"gleaner_node_allocated_limits_extended":   "the resource's integer units",
}

// Deprecated are names kept one release after they were replaced, because a dashboard, an alert or a page of the
// docs used them, with the names that replace them. Each one's help starts with "Deprecated: use" and names them.
var Deprecated = map[string][]string{
	"gleaner_node_allocated_requests": {"gleaner_node_allocated_requests_cpu_cores",
		"gleaner_node_allocated_requests_bytes", "gleaner_node_allocated_requests_extended"},
	"gleaner_node_allocated_limits": {"gleaner_node_allocated_limits_cpu_cores",
		"gleaner_node_allocated_limits_bytes", "gleaner_node_allocated_limits_extended"},
	"gleaner_noderesource_value":              {"gleaner_noderesource_cpu_cores", "gleaner_noderesource_memory_bytes"},
	"gleaner_noderesource_term":               {"gleaner_noderesource_term_cpu_cores", "gleaner_noderesource_term_memory_bytes"},
	"gleaner_agent_pod_cpu_usage_cores":       {"gleaner_agent_pod_cpu_usage_seconds_total"},
	"gleaner_agent_pod_disk_bytes_per_second": {"gleaner_agent_pod_disk_bytes_total"},
	"gleaner_agent_pod_disk_ops_per_second":   {"gleaner_agent_pod_disk_operations_total"},
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// reservedSuffixes end the names of a histogram's or summary's series (and OpenMetrics' created timestamps).
var reservedSuffixes = []string{"_count", "_sum", "_bucket", "_created", "_gcount", "_gsum"}

// Unit is the unit of f's values, as docs/metrics.md gives it: its base unit, "Unix time, seconds", "info" (always
// 1), what a Unitless gauge counts, or "count" for a counter of events.
func Unit(f Family) string {
	base := strings.TrimSuffix(f.Name, "_total")
	switch {
	case strings.HasSuffix(base, "_timestamp_seconds"):
		return "Unix time, seconds"
	case strings.HasSuffix(base, "_info"):
		return "info (always 1)"
	}
	if u := baseUnit(base); u != "" {
		return u
	}
	if u, ok := Unitless[f.Name]; ok {
		return u
	}
	if f.Type == "counter" {
		return "count"
	}
	return ""
}

// baseUnit is the base unit name ends in, or "".
func baseUnit(name string) string {
	for _, u := range baseUnits {
		if strings.HasSuffix(name, "_"+u) {
			return u
		}
	}
	return ""
}

// Problems are the ways the families break the naming rules, one sentence each; none when they follow them. The
// lists Unitless and Deprecated must name families that exist, and Deprecated's replacements too.
func Problems(fs []Family) []string {
	var out []string
	names := map[string]Family{}
	for _, f := range fs {
		names[f.Name] = f
	}
	for _, f := range fs {
		for _, p := range familyProblems(f, names) {
			out = append(out, f.Name+": "+p)
		}
	}
	for _, list := range []struct {
		name  string
		names []string
	}{{"Unitless", keys(Unitless)}, {"Deprecated", keys(Deprecated)}} {
		for _, n := range list.names {
			if _, ok := names[n]; !ok {
				out = append(out, fmt.Sprintf("%s lists %s, which no binary exports", list.name, n))
			}
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// familyProblems are f's problems; names are every family, for Deprecated's replacements.
func familyProblems(f Family, names map[string]Family) []string {
	var out []string
	if !snakeCase.MatchString(f.Name) {
		out = append(out, "not snake_case (lower-case words and digits joined by single underscores)")
	}
	switch agent := strings.HasPrefix(f.Name, "gleaner_agent_"); {
	case !strings.HasPrefix(f.Name, "gleaner_"):
		out = append(out, "does not start with gleaner_")
	case slices.Equal(f.Binaries, []string{AgentBinary}) && !agent:
		out = append(out, "exported by gleaner-agent alone, but does not start with gleaner_agent_")
	case agent && slices.Contains(f.Binaries, ManagerBinary):
		out = append(out, "starts with gleaner_agent_, but gleaner-manager exports it")
	}
	if strings.TrimSpace(f.Help) == "" {
		out = append(out, "has no help")
	}
	out = append(out, labelProblems(f)...)
	if replacements, ok := Deprecated[f.Name]; ok {
		return append(out, deprecationProblems(f, replacements, names)...)
	}
	if strings.HasPrefix(f.Help, "Deprecated") {
		out = append(out, "its help says it is deprecated, but Deprecated does not list it")
	}
	return append(out, unitProblems(f)...)
}

// labelProblems: snake_case label names, none reserved for histograms and summaries, and no unit label.
func labelProblems(f Family) []string {
	var out []string
	for _, l := range f.Labels {
		switch {
		case !snakeCase.MatchString(l):
			out = append(out, fmt.Sprintf("label %q is not snake_case", l))
		case l == "le" || l == "quantile":
			out = append(out, fmt.Sprintf("label %q is reserved for histograms and summaries", l))
		case l == "unit":
			out = append(out, "a unit label mixes units under one name: one metric per unit, named by it")
		}
	}
	return out
}

// unitProblems: the type and the unit words of f's name.
func unitProblems(f Family) []string {
	var out []string
	for _, s := range reservedSuffixes {
		if strings.HasSuffix(f.Name, s) {
			out = append(out, fmt.Sprintf("ends in %s, which Prometheus reserves for histogram and summary series", s))
		}
	}
	base, total := strings.CutSuffix(f.Name, "_total")
	switch {
	case f.Type == "counter" && !total:
		out = append(out, "a counter whose name does not end in _total")
	case f.Type != "counter" && total:
		out = append(out, "a "+f.Type+" whose name ends in _total, which only counters' do")
	}
	out = append(out, unitWordProblems(base)...)
	return append(out, baseUnitProblems(f, base)...)
}

// unitWordProblems: no word of name is a unit that is not a base unit, or makes a rate.
func unitWordProblems(name string) []string {
	var out []string
	words := strings.Split(name, "_")
	for i, w := range words {
		if u, ok := nonBaseUnits[w]; ok {
			out = append(out, fmt.Sprintf("%q is not a base unit: use %s", w, u))
		}
		if w == "per" && i+1 < len(words) && slices.Contains([]string{"second", "minute", "hour", "day"}, words[i+1]) {
			out = append(out, "a rate: export the counter (_total) it is taken from, and let PromQL's rate() take it")
		}
	}
	return out
}

// baseUnitProblems: the base unit base (f's name without _total) ends in fits f's type, a gauge or histogram has
// one unless Unitless says what it counts, and so does one whose resource label could choose between units.
func baseUnitProblems(f Family, base string) []string {
	var out []string
	unit := baseUnit(base)
	_, unitless := Unitless[f.Name]
	switch {
	case f.Type == "counter" && unit == "cores":
		out = append(out, "cores accumulated over time are CPU seconds: _seconds_total")
	case f.Type == "counter" && unit == "ratio":
		out = append(out, "a ratio is not a count: a gauge, or the counters it is a quotient of")
	case strings.HasSuffix(base, "_info") && f.Type != "gauge":
		out = append(out, "an _info metric is a gauge")
	case f.Type == "counter" || strings.HasSuffix(base, "_info"):
	case unit == "" && !unitless:
		out = append(out, "a "+f.Type+" whose name does not end in a base unit ("+strings.Join(baseUnits, ", ")+
			"), nor listed in Unitless with what it counts")
	}
	if f.Type != "counter" && slices.Contains(f.Labels, "resource") && unit == "" && !unitless {
		out = append(out, "its resource label selects between resources of different units (cores, bytes, counts): "+
			"one metric per unit, named by it")
	}
	return out
}

// deprecationProblems: a deprecated family's help starts with "Deprecated: use" and names every replacement, each
// exported and not deprecated itself.
func deprecationProblems(f Family, replacements []string, names map[string]Family) []string {
	var out []string
	if !strings.HasPrefix(f.Help, "Deprecated: use ") {
		out = append(out, `deprecated, but its help does not start with "Deprecated: use "`)
	}
	for _, r := range replacements {
		if !strings.Contains(f.Help, r) {
			out = append(out, "its help does not name its replacement "+r)
		}
		if _, ok := names[r]; !ok {
			out = append(out, "replaced by "+r+", which no binary exports")
		}
		if _, ok := Deprecated[r]; ok {
			out = append(out, "replaced by "+r+", which is deprecated too")
		}
	}
	return out
}
