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
			if err := printReport(&out, tt.report, tt.format, clk); err != nil {
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
		if err := printReport(&out, want, format, clocktesting.NewFakeClock(now)); err != nil {
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
	_ = printReport(&out, want, outputJSON, clocktesting.NewFakeClock(now))
	for _, field := range []string{`"source": "live"`, `"requestsPercent": 65`, `"name": "example.com/gpu"`, `"qosClass": "Burstable"`} {
		if !strings.Contains(out.String(), field) {
			t.Errorf("JSON output lacks %s", field)
		}
	}
}

func TestValidateOutput(t *testing.T) {
	for _, ok := range []string{"", "wide", "json", "yaml"} {
		if err := validateOutput(ok); err != nil {
			t.Errorf("validateOutput(%q) = %v", ok, err)
		}
	}
	if err := validateOutput("jsonpath={.x}"); err == nil || !strings.Contains(err.Error(), "want wide, json or yaml") {
		t.Errorf("validateOutput(jsonpath) = %v", err)
	}
}
