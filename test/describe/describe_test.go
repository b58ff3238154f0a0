package describe

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

const sample = `Name:               node-1
Non-terminated Pods:          (2 in total)
  Namespace                   Name     CPU Requests  CPU Limits   Memory Requests  Memory Limits  Age
  ---------                   ----     ------------  ----------   ---------------  -------------  ---
  default                     web      2632m (65%)   5110m (127%) 2237Mi (30%)     7223Mi (97%)   5m
  ml                          gpu      0 (0%)        0 (0%)       0 (0%)           0 (0%)         5m
Allocated resources:
  (Total limits may be over 100 percent, i.e., overcommitted.)
  Resource           Requests      Limits
  --------           --------      ------
  cpu                2632m (65%)   5110m (127%)
  memory             2237Mi (30%)  7223Mi (97%)
  ephemeral-storage  0 (0%)        0 (0%)
  example.com/gpu    1             1
Events:              <none>
`

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func pct(v int64) *int64 { return &v }

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	q := resource.MustParse
	want := Node{
		Pods: 2,
		Resources: []Row{
			{Name: "cpu", Requests: q("2632m"), Limits: q("5110m"), RequestsPercent: pct(65), LimitsPercent: pct(127)},
			{Name: "memory", Requests: q("2237Mi"), Limits: q("7223Mi"), RequestsPercent: pct(30), LimitsPercent: pct(97)},
			{Name: "ephemeral-storage", Requests: q("0"), Limits: q("0"), RequestsPercent: pct(0), LimitsPercent: pct(0)},
			{Name: "example.com/gpu", Requests: q("1"), Limits: q("1")},
		},
		PodRows: map[string]Pod{
			"default/web": {CPURequests: q("2632m"), CPULimits: q("5110m"), MemoryRequests: q("2237Mi"), MemoryLimits: q("7223Mi"),
				CPURequestsPercent: 65, CPULimitsPercent: 127, MemoryRequestsPercent: 30, MemoryLimitsPercent: 97},
			"ml/gpu": {CPURequests: q("0"), CPULimits: q("0"), MemoryRequests: q("0"), MemoryLimits: q("0")},
		},
	}
	if d := cmp.Diff(want, got, quantityEqual); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
}

func TestParseRejectsWhatItCannotRead(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no allocated resources", "Name: n\nEvents: <none>\n", "found 0 allocated resource rows"},
		{"bad quantity", strings.Replace(sample, "  cpu                2632m", "  cpu                lots", 1), `cannot read the quantities of "  cpu`},
		{"bad pod row", strings.Replace(sample, "0 (0%)        0 (0%)       0 (0%)", "0 (0%) 0", 1), "cannot read the pod row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
