package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func sampleReport(now time.Time) Report {
	node := testutil.Node("node-1").Allocatable("cpu", "4", "memory", "7599548Ki", "hugepages-2Mi", "1Gi", "example.com/gpu", "2", "pods", "110").Obj()
	created := metav1.NewTime(now.Add(-90 * time.Minute))
	p1 := testutil.Pod("web").Node("node-1").Requests("cpu", "2632m", "memory", "2237Mi").Limits("cpu", "5110m", "memory", "7223Mi").Obj()
	p2 := testutil.Pod("gpu").Namespace("ml").Node("node-1").Requests("example.com/gpu", "1").Limits("example.com/gpu", "1").Obj()
	p1.CreationTimestamp, p2.CreationTimestamp = created, created
	reports := liveReports([]corev1.Node{*node}, []corev1.Pod{*p1, *p2}, true, "")
	sortReports(reports, sortKey{})
	return Report{Source: SourceLive, Nodes: reports}
}

func TestPrintTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	tests := []struct {
		name   string
		report Report
		format string
		want   string
	}{
		{
			name:   "default",
			report: withoutPods(sampleReport(now)),
			want: `NODE     RESOURCE            REQUESTS       LIMITS
node-1   cpu                 2632m (65%)    5110m (127%)
node-1   memory              2237Mi (30%)   7223Mi (97%)
node-1   ephemeral-storage   0 (0%)         0 (0%)
node-1   hugepages-2Mi       0 (0%)         0 (0%)
node-1   example.com/gpu     1 (50%)        1 (50%)
`,
		},
		{
			name:   "wide",
			report: withoutPods(sampleReport(now)),
			format: outputWide,
			want: `NODE     RESOURCE            REQUESTS       LIMITS         ALLOCATABLE   PODS
node-1   cpu                 2632m (65%)    5110m (127%)   4             2
node-1   memory              2237Mi (30%)   7223Mi (97%)   7599548Ki     2
node-1   ephemeral-storage   0 (0%)         0 (0%)         -             2
node-1   hugepages-2Mi       0 (0%)         0 (0%)         1Gi           2
node-1   example.com/gpu     1 (50%)        1 (50%)        2             2
`,
		},
		{
			name:   "pods",
			report: sampleReport(now),
			want: `NODE     NAMESPACE   POD   CPU REQUESTS   CPU LIMITS     MEMORY REQUESTS   MEMORY LIMITS   AGE
node-1   default     web   2632m (65%)    5110m (127%)   2237Mi (30%)      7223Mi (97%)    90m
node-1   ml          gpu   0 (0%)         0 (0%)         0 (0%)            0 (0%)          90m

NODE     RESOURCE            REQUESTS       LIMITS
node-1   cpu                 2632m (65%)    5110m (127%)
node-1   memory              2237Mi (30%)   7223Mi (97%)
node-1   ephemeral-storage   0 (0%)         0 (0%)
node-1   hugepages-2Mi       0 (0%)         0 (0%)
node-1   example.com/gpu     1 (50%)        1 (50%)
`,
		},
		{
			name:   "pods wide",
			report: sampleReport(now),
			format: outputWide,
			want: `NODE     NAMESPACE   POD   CPU REQUESTS   CPU LIMITS     MEMORY REQUESTS   MEMORY LIMITS   AGE   QOS          PHASE     OTHER REQUESTS
node-1   default     web   2632m (65%)    5110m (127%)   2237Mi (30%)      7223Mi (97%)    90m   Burstable    Running   -
node-1   ml          gpu   0 (0%)         0 (0%)         0 (0%)            0 (0%)          90m   BestEffort   Running   example.com/gpu=1
`,
		},
		{
			name:   "no nodes",
			report: Report{Source: SourceLive},
			want:   "NODE   RESOURCE   REQUESTS   LIMITS\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printReport(&out, tt.report, output{format: tt.format}, clk); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if tt.name == "pods wide" {
				got = got[:strings.Index(got, "\n\n")+1]
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
}

func withoutPods(r Report) Report {
	for i := range r.Nodes {
		r.Nodes[i].Pods = nil
	}
	return r
}

func TestPrintJSONAndYAML(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	want := sampleReport(now)
	for _, format := range []string{outputJSON, outputYAML} {
		var out bytes.Buffer
		if err := printReport(&out, want, output{format: format}, clocktesting.NewFakeClock(now)); err != nil {
			t.Fatal(err)
		}
		var got Report
		var err error
		if format == outputJSON {
			err = json.Unmarshal(out.Bytes(), &got)
		} else {
			err = yaml.UnmarshalStrict(out.Bytes(), &got)
		}
		if err != nil {
			t.Fatalf("%s output does not parse back: %v\n%s", format, err, out.String())
		}
		if d := cmp.Diff(want, got, quantityEqual, cmp.AllowUnexported(NodeReport{}), cmp.FilterPath(func(p cmp.Path) bool {
			return p.Last().String() == ".summary"
		}, cmp.Ignore())); d != "" {
			t.Errorf("%s round trip (-want +got):\n%s", format, d)
		}
	}
	var out bytes.Buffer
	_ = printReport(&out, want, output{format: outputJSON}, clocktesting.NewFakeClock(now))
	for _, field := range []string{`"source": "live"`, `"requestsPercent": 65`, `"name": "example.com/gpu"`, `"qosClass": "Burstable"`} {
		if !strings.Contains(out.String(), field) {
			t.Errorf("JSON output lacks %s", field)
		}
	}
}

// TestOutputFlags: every verb takes json, yaml and jsonpath=TEMPLATE; wide and name only where the verb says so; a
// format it does not take, or a template that does not parse, is refused naming what it takes.
func TestOutputFlags(t *testing.T) {
	table := outputFlags{wide: true, name: true, table: true, plain: "the table"}
	text := outputFlags{plain: "one line"}
	for _, tt := range []struct {
		flags   outputFlags
		value   string
		want    string // the parsed format, or the error's text
		refused bool
	}{
		{table, "", outputTable, false},
		{table, "wide", outputWide, false},
		{table, "name", outputName, false},
		{table, "yaml", outputYAML, false},
		{table, "jsonpath={.nodes[*].name}", outputJSONPath, false},
		{text, "json", outputJSON, false},
		{text, "jsonpath={.clientVersion.goVersion}", outputJSONPath, false},
		{text, "wide", `-o "wide": want json, yaml, jsonpath=TEMPLATE (or nothing for one line)`, true},
		{text, "name", `want json, yaml, jsonpath=TEMPLATE`, true},
		{table, "custom-columns=X:.x", `want wide, name, json, yaml, jsonpath=TEMPLATE (or nothing for the table)`, true},
		{table, "jsonpath={.nodes[", `-o jsonpath={.nodes[: unterminated array`, true},
		{table, "jsonpath=", `-o jsonpath= needs a template`, true},
	} {
		f := tt.flags
		f.value = tt.value
		out, err := f.parse()
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v -o %q: want an error saying %q, got %v", tt.flags, tt.value, tt.want, err)
		case !tt.refused && (err != nil || out.format != tt.want):
			t.Errorf("%+v -o %q: got format %q, %v; want %q", tt.flags, tt.value, out.format, err, tt.want)
		}
	}
}

// TestReportFormats: the nodes report as -o name (kubectl's kind/name lines), -o jsonpath over the JSON -o json
// prints, and --no-headers (the table less its header line).
func TestReportFormats(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	r := withoutPods(sampleReport(now))
	clk := clocktesting.NewFakeClock(now)
	print := func(value string, noHeaders bool) string {
		t.Helper()
		f := outputFlags{wide: true, name: true, table: true, plain: "the table", value: value, noHeaders: noHeaders}
		out, err := f.parse()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := printReport(&b, r, out, clk); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var names, path []string
	for _, n := range r.Nodes {
		names = append(names, "node/"+n.Name)
		path = append(path, n.Name+"="+n.Resources[0].Requests.String())
	}
	if got, want := print("name", false), strings.Join(names, "\n")+"\n"; got != want {
		t.Errorf("-o name:\n%s\nwant:\n%s", got, want)
	}
	if got, want := print(`jsonpath={range .nodes[*]}{.name}={.resources[0].requests}{"\n"}{end}`, false), strings.Join(path, "\n")+"\n"; got != want {
		t.Errorf("-o jsonpath:\n%s\nwant:\n%s", got, want)
	}
	// A field the JSON leaves out prints nothing, as kubectl's default --allow-missing-template-keys.
	if got := print(`jsonpath={.nodes[0].noSuchField}`, false); got != "" {
		t.Errorf("-o jsonpath of a missing field: %q, want nothing", got)
	}
	for _, value := range []string{"", "wide"} {
		// The columns are as wide as their cells, without the header's: compare the cells.
		full, bare := print(value, false), print(value, true)
		header, rest, _ := strings.Cut(full, "\n")
		if !strings.HasPrefix(header, "NODE ") || cells(bare) != cells(rest) {
			t.Errorf("-o %q --no-headers:\n%s\nwant the table without its header:\n%s", value, bare, rest)
		}
	}
}

// cells is a table's text with each run of spaces made one, so tables aligned differently compare equal.
func cells(table string) string {
	var lines []string
	for _, l := range strings.Split(table, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}
