package metricsref

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEveryMetricFollowsTheNamingRules lists every family the two binaries export and fails on each name that
// breaks Prometheus's naming rules (rules.go), and on an entry of Unitless or Deprecated that names nothing.
func TestEveryMetricFollowsTheNamingRules(t *testing.T) {
	fs, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 50 {
		t.Fatalf("the catalog has only %d families", len(fs))
	}
	for _, p := range Problems(fs) {
		t.Error(p)
	}
}

// TestProblemsCatchBrokenNames: each kind of broken name is reported, and a name that follows the rules is not.
func TestProblemsCatchBrokenNames(t *testing.T) {
	gauge := func(name string, labels ...string) Family {
		return Family{Name: name, Type: "gauge", Labels: labels, Help: "Help."}
	}
	counter := func(name string) Family { return Family{Name: name, Type: "counter", Help: "Help."} }
	tests := []struct {
		name string
		f    Family
		want []string // a substring of each problem, in order
	}{
		{"a gauge in cores", gauge("gleaner_x_cpu_cores", "node"), nil},
		{"a counter of CPU seconds", counter("gleaner_x_cpu_usage_seconds_total"), nil},
		{"a counter of events", counter("gleaner_x_writes_total"), nil},
		{"a timestamp", gauge("gleaner_x_update_timestamp_seconds"), nil},
		{"an info gauge", gauge("gleaner_x_info", "version"), nil},
		{"a histogram of seconds", Family{Name: "gleaner_x_duration_seconds", Type: "histogram", Help: "Help."}, nil},
		{"no prefix", gauge("agent_x_bytes"), []string{"does not start with gleaner_"}},
		{"the agent's without its prefix", Family{Name: "gleaner_x_bytes", Type: "gauge", Help: "H.", Binaries: []string{AgentBinary}},
			[]string{"does not start with gleaner_agent_"}},
		{"the manager's with the agent's prefix", Family{Name: "gleaner_agent_x_bytes", Type: "gauge", Help: "H.", Binaries: []string{ManagerBinary}},
			[]string{"gleaner-manager exports it"}},
		{"camel case", gauge("gleaner_xBytes"), []string{"not snake_case", "does not end in a base unit"}},
		{"a double underscore", gauge("gleaner__x_bytes"), []string{"not snake_case"}},
		{"a counter without _total", counter("gleaner_x_writes"), []string{"does not end in _total"}},
		{"a gauge with _total", gauge("gleaner_x_writes_total"), []string{"ends in _total", "does not end in a base unit"}},
		{"millicores", gauge("gleaner_x_millicores"), []string{`"millicores" is not a base unit`, "does not end in a base unit"}},
		{"a percent", gauge("gleaner_x_usage_percent"), []string{`"percent" is not a base unit`, "does not end in a base unit"}},
		{"a rate", gauge("gleaner_x_disk_bytes_per_second"), []string{"a rate", "does not end in a base unit"}},
		{"cores counted", counter("gleaner_x_cpu_cores_total"), []string{"_seconds_total"}},
		{"no unit", gauge("gleaner_x_usage"), []string{"does not end in a base unit"}},
		{"a resource label without a unit", gauge("gleaner_x_allocated", "node", "resource"),
			[]string{"does not end in a base unit", "selects between resources of different units"}},
		{"a unit label", gauge("gleaner_x_allocated_bytes", "resource", "unit"), []string{"a unit label"}},
		{"a label not snake_case", gauge("gleaner_x_bytes", "podName"), []string{`label "podName" is not snake_case`}},
		{"a reserved label", gauge("gleaner_x_bytes", "le"), []string{`label "le" is reserved`}},
		{"a reserved suffix", gauge("gleaner_x_bytes_count"), []string{"ends in _count", "does not end in a base unit"}},
		{"an info counter", counter("gleaner_x_info_total"), []string{"an _info metric is a gauge"}},
		{"a counter of events by resource", Family{Name: "gleaner_x_writes_total", Type: "counter", Labels: []string{"resource"}, Help: "H."}, nil},
		{"an info histogram", Family{Name: "gleaner_x_info", Type: "histogram", Help: "H."}, []string{"an _info metric is a gauge"}},
		{"no help", Family{Name: "gleaner_x_bytes", Type: "gauge"}, []string{"has no help"}},
		{"deprecated but not listed", Family{Name: "gleaner_x_bytes", Type: "gauge", Help: "Deprecated: use y."},
			[]string{"Deprecated does not list it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := familyProblems(tt.f, map[string]Family{tt.f.Name: tt.f})
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// TestDeprecatedNamesSayWhatReplacesThem: a deprecated name is exempt from the rules only with a help that starts
// with "Deprecated: use" and names its replacements, which exist and are not deprecated.
func TestDeprecatedNamesSayWhatReplacesThem(t *testing.T) {
	const old, repl = "gleaner_node_allocated_requests", "gleaner_node_allocated_requests_cpu_cores"
	names := map[string]Family{}
	for _, r := range Deprecated[old] {
		names[r] = Family{Name: r}
	}
	good := Family{Name: old, Type: "gauge", Labels: []string{"node", "resource"},
		Help: "Deprecated: use " + strings.Join(Deprecated[old], ", ") + "."}
	if got := familyProblems(good, names); len(got) != 0 {
		t.Errorf("a deprecated family that says what replaces it: %q", got)
	}
	bad := good
	bad.Help = "Sum of the requests."
	got := familyProblems(bad, names)
	want := []string{`does not start with "Deprecated: use "`, "does not name its replacement " + repl}
	if len(got) != len(Deprecated[old])+1 || !strings.Contains(got[0], want[0]) || !strings.Contains(got[1], want[1]) {
		t.Errorf("a deprecated family that does not say so: %q, want %q first", got, want)
	}
	delete(names, repl)
	if got := familyProblems(good, names); len(got) != 1 || !strings.Contains(got[0], "which no binary exports") {
		t.Errorf("a replacement that is missing: %q", got)
	}
	if got := Problems([]Family{good}); !slices.ContainsFunc(got, func(p string) bool {
		return strings.HasPrefix(p, "Unitless lists ")
	}) {
		t.Errorf("Problems of a catalog without the Unitless families: %q, want the list's stale entries", got)
	}
}

// TestUnit: the unit column of docs/metrics.md.
func TestUnit(t *testing.T) {
	for _, tt := range []struct {
		f    Family
		want string
	}{
		{Family{Name: "gleaner_agent_pod_cpu_usage_seconds_total", Type: "counter"}, "seconds"},
		{Family{Name: "gleaner_agent_evictions_total", Type: "counter"}, "count"},
		{Family{Name: "gleaner_noderesource_nodemetric_update_timestamp_seconds", Type: "gauge"}, "Unix time, seconds"},
		{Family{Name: "gleaner_build_info", Type: "gauge"}, "info (always 1)"},
		{Family{Name: "gleaner_node_allocated_requests_cpu_cores", Type: "gauge"}, "cores"},
		{Family{Name: "gleaner_agent_cpi_containers", Type: "gauge"}, "containers"},
	} {
		if got := Unit(tt.f); got != tt.want {
			t.Errorf("Unit(%s) = %q, want %q", tt.f.Name, got, tt.want)
		}
	}
}

// TestCatalogTypesAndLabels: the catalog reads each family's type and labels from its collector, a vector without
// series and a collector of constant metrics included.
func TestCatalogTypesAndLabels(t *testing.T) {
	fs, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Family{}
	for _, f := range fs {
		got[f.Name] = Family{Name: f.Name, Type: f.Type, Labels: f.Labels, Binaries: f.Binaries}
	}
	for _, want := range []Family{
		{Name: "gleaner_build_info", Type: "gauge", Labels: []string{"commit", "goversion", "version"},
			Binaries: []string{ManagerBinary, AgentBinary}},
		{Name: "gleaner_agent_evictions_total", Type: "counter", Labels: []string{"action", "reason", "result"},
			Binaries: []string{AgentBinary}},
		{Name: "gleaner_noderesource_degraded", Type: "gauge", Labels: []string{"node"}, Binaries: []string{ManagerBinary}},
		{Name: "gleaner_agent_netqos_sent_bytes_total", Type: "counter", Labels: []string{"device", "class"},
			Binaries: []string{AgentBinary}},
		{Name: "gleaner_agent_runtime_hook_nri_duration_seconds", Type: "histogram", Labels: []string{"event"},
			Binaries: []string{AgentBinary}},
	} {
		if diff := cmp.Diff(want, got[want.Name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", want.Name, diff)
		}
	}
	for _, f := range fs {
		if Library(f.Name) {
			t.Errorf("%s, a library collector's family, is in the catalog", f.Name)
		}
	}
}

var gleanerLiteral = regexp.MustCompile(`"(gleaner_[a-z0-9_]+)"`)

// TestCatalogIsComplete: every gleaner_* string literal of the non-test Go files of pkg/ and cmd/ (every Gleaner
// metric is named by one) is a family of the catalog: a metric registered somewhere the catalog does not build fails
// here.
func TestCatalogIsComplete(t *testing.T) {
	fs, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range fs {
		known[f.Name] = true
	}
	found := 0
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range gleanerLiteral.FindAllStringSubmatch(string(b), -1) {
				found++
				if !known[m[1]] {
					t.Errorf("%s names %s, which the catalog does not have: build what registers it in Manager or Agent", path, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < len(fs) {
		t.Errorf("the scan found %d names for %d families", found, len(fs))
	}
}
