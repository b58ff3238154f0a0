package v1alpha1

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseNodeReservation(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    map[corev1.ResourceName]string
		wantErr string
	}{
		{"resources", `{"resources": {"cpu": "1500m", "memory": "2Gi"}}`, map[corev1.ResourceName]string{"cpu": "1500m", "memory": "2Gi"}, ""},
		{"a CPU list counts as that many cores", `{"reservedCPUs": "0-3,8"}`, map[corev1.ResourceName]string{"cpu": "5"}, ""},
		{"the CPU list takes the place of resources' cpu", `{"resources": {"cpu": "1", "memory": "1Gi"}, "reservedCPUs": "2,4"}`,
			map[corev1.ResourceName]string{"cpu": "2", "memory": "1Gi"}, ""},
		{"applyPolicy is accepted", `{"reservedCPUs": "0", "applyPolicy": "ReservedCPUsOnly"}`, map[corev1.ResourceName]string{"cpu": "1"}, ""},
		{"empty object", `{}`, map[corev1.ResourceName]string{}, ""},
		{"not JSON", `{"resources": {"cpu": "1"}`, nil, "not one JSON object: unexpected end of JSON input"},
		{"two values", `{} {}`, nil, "not one JSON object"},
		{"not an object", `["0-3"]`, nil, "cannot unmarshal array"},
		{"unknown field", `{"reservedCores": "0-3"}`, nil, `unknown field "reservedCores"`},
		{"field names match ignoring case, as encoding/json does", `{"reservedcpus": "0-1"}`, map[corev1.ResourceName]string{"cpu": "2"}, ""},
		{"bad quantity", `{"resources": {"cpu": "lots"}}`, nil, "quantities must match"},
		{"negative amount", `{"resources": {"memory": "-1Gi"}}`, nil, "resources: memory is negative (-1Gi)"},
		{"bad CPU list", `{"reservedCPUs": "3-1"}`, nil, `reservedCPUs is not a CPU list such as 0-3,8: CPU list "3-1": invalid range`},
		{"CPU list of words", `{"reservedCPUs": "all"}`, nil, `reservedCPUs is not a CPU list such as 0-3,8: CPU list "all": "all" is not a CPU number`},
		// Anyone who may annotate a node (its kubelet included) could hang the manager's noderesource reconcile with
		// these: cpuset.Parse builds every CPU of a range, and of every overlapping range again.
		{"a huge range", `{"reservedCPUs": "0-99999999999"}`, nil, `reservedCPUs is not a CPU list such as 0-3,8: CPU list "0-99999999999": CPU 99999999999 is above 65535`},
		{"overlapping ranges", `{"reservedCPUs": "` + strings.Repeat("0-65535,", 30000) + `0"}`, nil, "name more than 65536 CPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got corev1.ResourceList
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				got, err = ParseNodeReservation(tt.value)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("ParseNodeReservation(%.60q...) still running after 10s", tt.value)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for name, want := range tt.want {
				if q := got[name]; q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %s, want %s", name, q.String(), want)
				}
			}
		})
	}
}

func TestNodeReservationOf(t *testing.T) {
	node := func(annotations map[string]string) *corev1.Node {
		n := &corev1.Node{}
		n.Annotations = annotations
		return n
	}
	const good, other, bad = `{"reservedCPUs": "0-1"}`, `{"resources": {"cpu": "3"}}`, `{"reservedCPUs": 2}`
	tests := []struct {
		name        string
		annotations map[string]string
		wantCPU     string // "" when nothing is reserved
		wantFrom    string
		wantProblem string
	}{
		{"none", nil, "", "", ""},
		{"gleaner annotation", map[string]string{AnnotationNodeReservation: good}, "2", AnnotationNodeReservation, ""},
		{"alias", map[string]string{AnnotationNodeReservationAlias: good}, "2", AnnotationNodeReservationAlias, ""},
		{"gleaner annotation wins", map[string]string{AnnotationNodeReservation: good, AnnotationNodeReservationAlias: other},
			"2", AnnotationNodeReservation, ""},
		{"empty value is absent", map[string]string{AnnotationNodeReservation: " ", AnnotationNodeReservationAlias: other},
			"3", AnnotationNodeReservationAlias, ""},
		{"malformed alone is absent", map[string]string{AnnotationNodeReservationAlias: bad}, "", "",
			"node annotation node.koordinator.sh/reservation ignored: decoding"},
		{"malformed gleaner annotation falls back to the alias", map[string]string{AnnotationNodeReservation: bad, AnnotationNodeReservationAlias: other},
			"3", AnnotationNodeReservationAlias, "node annotation gleaner.sh/node-reservation ignored: decoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from, problems := NodeReservationOf(node(tt.annotations))
			if from != tt.wantFrom {
				t.Errorf("from = %q, want %q", from, tt.wantFrom)
			}
			if q, ok := got[corev1.ResourceCPU]; tt.wantCPU == "" && ok || tt.wantCPU != "" && q.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Errorf("reserved cpu = %v, want %q", got, tt.wantCPU)
			}
			switch {
			case tt.wantProblem == "" && len(problems) > 0:
				t.Errorf("unexpected problems %v", problems)
			case tt.wantProblem != "" && (len(problems) != 1 || !strings.Contains(problems[0].Error(), tt.wantProblem)):
				t.Errorf("problems = %v, want one containing %q", problems, tt.wantProblem)
			}
		})
	}
}
