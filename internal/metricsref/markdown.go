package metricsref

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// DocPath is the page Markdown writes, relative to the repository root.
const DocPath = "docs/metrics.md"

// Markdown renders the reference page of fs (Catalog's): a table per binary of every family's name, type, unit,
// labels and help, the rules the names follow, and the deprecated names with what replaces them.
func Markdown(fs []Family) []byte {
	var b bytes.Buffer
	b.WriteString("# Metrics\n\n" +
		"Every metric gleaner-manager and gleaner-agent export: its type, unit, labels and help, as the code registers\n" +
		"it. This page is generated from the collectors the binaries register (`internal/metricsref`): after a change\n" +
		"to a metric, `go run ./hack/metrics-doc > docs/metrics.md` writes it again, and `go test ./test/docs/` fails\n" +
		"while it is not what the code registers. How to scrape the binaries, the Grafana dashboard and the alerts are\n" +
		"in [operations.md](operations.md#monitoring).\n\n" +
		"Besides these, gleaner-manager serves controller-runtime's and client-go's metrics (`controller_runtime_*`,\n" +
		"`workqueue_*`, `rest_client_*`, `leader_election_*`) and gleaner-agent the Go runtime's and the process's\n" +
		"(`go_*`, `process_*`). Scraped as operations.md says, every series of an agent also carries its `node`.\n\n" +
		"## Names\n\n" +
		"The names follow [Prometheus's naming rules](https://prometheus.io/docs/practices/naming/), and a test\n" +
		"(`internal/metricsref`) fails on one that does not:\n\n" +
		"- every name starts with `gleaner_` (the agent's with `gleaner_agent_`) and is snake_case, its labels too;\n" +
		"- one unit per metric, a base unit, named by the name's last word: `_seconds`, `_bytes`, `_ratio` (0..1, not a\n" +
		"  percent), and `_cores` for CPU held at one moment. No millicores, no kilobytes, no percent;\n" +
		"- what accumulates is a counter, and ends in `_total`: CPU time in `_seconds_total`, disk traffic in\n" +
		"  `_bytes_total`. There are no rates (`_per_second`): PromQL's `rate()` takes them over the window a query\n" +
		"  asks for, and nothing that happens between two scrapes is lost;\n" +
		"- a `resource` label only chooses among resources of the name's one unit (`resource=\"cpu\"` and\n" +
		"  `resource=\"kubernetes.io/batch-cpu\"` are both in cores), and no label names a unit;\n" +
		"- a gauge without a base unit says what it counts (the unit column: pods, containers, 1 or 0);\n" +
		"- `_info` is an information gauge, always 1, its labels the information; `_timestamp_seconds` a Unix time.\n\n")
	for _, section := range []struct {
		title    string
		binaries []string
	}{
		{"Both binaries", []string{ManagerBinary, AgentBinary}},
		{"gleaner-manager", []string{ManagerBinary}},
		{"gleaner-agent", []string{AgentBinary}},
	} {
		var rows []Family
		for _, f := range fs {
			if _, old := Deprecated[f.Name]; !old && slices.Equal(f.Binaries, section.binaries) {
				rows = append(rows, f)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n| metric | type | unit | labels | help |\n| --- | --- | --- | --- | --- |\n", section.title)
		for _, f := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Type, Unit(f), labels(f.Labels), cell(f.Help))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Deprecated\n\n" +
		"Names kept one release after they were replaced, because the dashboard, an alert or these pages used them.\n" +
		"Each is exported beside what replaces it, and its help starts with \"Deprecated: use\"; the dashboard and the\n" +
		"alerts read only the new names (`test/monitoring` fails on an old one).\n\n" +
		"| metric | exported by | type | labels | use instead |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range fs {
		if repl, old := Deprecated[f.Name]; old {
			var names []string
			for _, r := range repl {
				names = append(names, "`"+r+"`")
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, strings.Join(f.Binaries, ", "), f.Type,
				labels(f.Labels), strings.Join(names, ", "))
		}
	}
	return b.Bytes()
}

func labels(ls []string) string {
	if len(ls) == 0 {
		return "-"
	}
	return "`" + strings.Join(ls, "`, `") + "`"
}

// cell is s made safe for a table cell: a pipe would end it, an asterisk start emphasis.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "\n", " ").Replace(s)
}
