// Package describe reads the allocation part of `kubectl describe node` and compares Gleaner's numbers with it:
// the reference the parity test (envtest) and the e2e test (a real node) hold NodeAllocation and `kubectl glean
// nodes` to. It parses kubectl v1.36 output such as:
//
//	Non-terminated Pods:          (2 in total)
//	  Namespace                   Name     CPU Requests  CPU Limits  Memory Requests  Memory Limits  Age
//	  ---------                   ----     ------------  ----------  ---------------  -------------  ---
//	  default                     web      100m (2%)     500m (12%)  128Mi (1%)       512Mi (6%)     5m
//	  default                     gpu      0 (0%)        0 (0%)      0 (0%)           0 (0%)         5m
//	Allocated resources:
//	  (Total limits may be over 100 percent, i.e., overcommitted.)
//	  Resource           Requests    Limits
//	  --------           --------    ------
//	  cpu                100m (2%)   500m (12%)
//	  memory             128Mi (1%)  512Mi (6%)
//	  ephemeral-storage  0 (0%)      0 (0%)
//	  example.com/gpu    1           1
//	Events:              <none>
package describe

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/cli"
)

// Node is what `kubectl describe node` says about a node's allocation.
type Node struct {
	// Pods is the "(N in total)" of "Non-terminated Pods".
	Pods int32
	// Resources are the rows of "Allocated resources", in kubectl's order.
	Resources []Row
	// PodRows are the rows of "Non-terminated Pods", by namespace/name.
	PodRows map[string]Pod
}

// Row is one row of "Allocated resources".
type Row struct {
	Name             string
	Requests, Limits resource.Quantity
	// RequestsPercent and LimitsPercent are nil where kubectl prints none (extended resources).
	RequestsPercent, LimitsPercent *int64
}

// Pod is one row of "Non-terminated Pods".
type Pod struct {
	CPURequests, CPULimits, MemoryRequests, MemoryLimits                             resource.Quantity
	CPURequestsPercent, CPULimitsPercent, MemoryRequestsPercent, MemoryLimitsPercent int64
}

var (
	totalRe = regexp.MustCompile(`^Non-terminated Pods:\s+\((\d+) in total\)`)
	rowRe   = regexp.MustCompile(`^\s+(\S+)\s+(\S+)(?:\s+\((\d+)%\))?\s+(\S+)(?:\s+\((\d+)%\))?\s*$`)
	podRe   = regexp.MustCompile(`^\s+(\S+)\s+(\S+)\s+(\S+) \((-?\d+)%\)\s+(\S+) \((-?\d+)%\)\s+(\S+) \((-?\d+)%\)\s+(\S+) \((-?\d+)%\)\s+\S+\s*$`)
)

// Parse reads the output of `kubectl describe node` for one node.
func Parse(r io.Reader) (Node, error) {
	n := Node{PodRows: map[string]Pod{}}
	section := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := totalRe.FindStringSubmatch(line); m != nil {
			pods, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil {
				return Node{}, fmt.Errorf("reading %q: %w", line, err)
			}
			n.Pods, section = int32(pods), "pods"
			continue
		}
		if strings.HasPrefix(line, "Allocated resources:") {
			section = "allocated"
			continue
		}
		if !strings.HasPrefix(line, " ") {
			section = ""
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "-") || fields[0] == "Namespace" || fields[0] == "Resource" || fields[0] == "(Total" {
			continue
		}
		var err error
		switch section {
		case "allocated":
			err = n.addRow(line)
		case "pods":
			err = n.addPod(line)
		}
		if err != nil {
			return Node{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return Node{}, fmt.Errorf("reading kubectl's output: %w", err)
	}
	if len(n.Resources) < 3 {
		return Node{}, fmt.Errorf("found %d allocated resource rows, want at least cpu, memory and ephemeral-storage", len(n.Resources))
	}
	return n, nil
}

func (n *Node) addRow(line string) error {
	m := rowRe.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("cannot read the allocated resources row %q", line)
	}
	req, err1 := resource.ParseQuantity(m[2])
	lim, err2 := resource.ParseQuantity(m[4])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("cannot read the quantities of %q", line)
	}
	n.Resources = append(n.Resources, Row{Name: m[1], Requests: req, Limits: lim, RequestsPercent: percent(m[3]), LimitsPercent: percent(m[5])})
	return nil
}

func (n *Node) addPod(line string) error {
	m := podRe.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("cannot read the pod row %q", line)
	}
	var q [4]resource.Quantity
	for i := range q {
		var err error
		if q[i], err = resource.ParseQuantity(m[3+2*i]); err != nil {
			return fmt.Errorf("cannot read the quantities of %q", line)
		}
	}
	n.PodRows[m[1]+"/"+m[2]] = Pod{
		CPURequests: q[0], CPURequestsPercent: *percent(m[4]), CPULimits: q[1], CPULimitsPercent: *percent(m[6]),
		MemoryRequests: q[2], MemoryRequestsPercent: *percent(m[8]), MemoryLimits: q[3], MemoryLimitsPercent: *percent(m[10]),
	}
	return nil
}

func percent(s string) *int64 {
	if s == "" {
		return nil
	}
	p, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return &p
}

// DiffStatus lists where a NodeAllocation status disagrees with kubectl: every row's value and percentage (the
// status has no percentage where the allocatable is zero; kubectl prints 0% there).
func (n Node) DiffStatus(st slov1alpha1.NodeAllocationStatus) []string {
	var diffs []string
	if st.PodCount != n.Pods {
		diffs = append(diffs, fmt.Sprintf("NodeAllocation counts %d pods, kubectl %d", st.PodCount, n.Pods))
	}
	for _, row := range n.Resources {
		name := corev1.ResourceName(row.Name)
		diffs = appendQuantity(diffs, "NodeAllocation requests of "+row.Name, row.Requests, st.Requests[name])
		diffs = appendQuantity(diffs, "NodeAllocation limits of "+row.Name, row.Limits, st.Limits[name])
		if row.RequestsPercent != nil && st.RequestsPercent[name] != *row.RequestsPercent {
			diffs = append(diffs, fmt.Sprintf("NodeAllocation requests %% of %s = %d, kubectl %d", row.Name, st.RequestsPercent[name], *row.RequestsPercent))
		}
		if row.LimitsPercent != nil && st.LimitsPercent[name] != *row.LimitsPercent {
			diffs = append(diffs, fmt.Sprintf("NodeAllocation limits %% of %s = %d, kubectl %d", row.Name, st.LimitsPercent[name], *row.LimitsPercent))
		}
	}
	return diffs
}

// DiffReport lists where one node's report of `kubectl glean nodes -o json` disagrees with kubectl: the same rows
// in the same order, the same values and, where kubectl prints one, the same percentage.
func (n Node) DiffReport(what string, r cli.NodeReport) []string {
	var diffs []string
	if r.PodCount != n.Pods {
		diffs = append(diffs, fmt.Sprintf("%s: %d pods, kubectl %d", what, r.PodCount, n.Pods))
	}
	var got, want []string
	for _, res := range r.Resources {
		got = append(got, string(res.Name))
	}
	for _, row := range n.Resources {
		want = append(want, row.Name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return append(diffs, fmt.Sprintf("%s: rows %q, kubectl %q", what, got, want))
	}
	for i, row := range n.Resources {
		res := r.Resources[i]
		diffs = appendQuantity(diffs, what+" requests of "+row.Name, row.Requests, res.Requests)
		diffs = appendQuantity(diffs, what+" limits of "+row.Name, row.Limits, res.Limits)
		diffs = appendPercent(diffs, what+" requests % of "+row.Name, row.RequestsPercent, res.RequestsPercent)
		diffs = appendPercent(diffs, what+" limits % of "+row.Name, row.LimitsPercent, res.LimitsPercent)
	}
	return diffs
}

// DiffPodRows lists where the pod rows of `kubectl glean nodes --pods` disagree with kubectl's "Non-terminated
// Pods".
func (n Node) DiffPodRows(r cli.NodeReport) []string {
	var diffs []string
	got := map[string]cli.PodReport{}
	for _, p := range r.Pods {
		got[p.Namespace+"/"+p.Name] = p
	}
	if len(got) != len(n.PodRows) {
		diffs = append(diffs, fmt.Sprintf("--pods lists %d pods, kubectl %d", len(got), len(n.PodRows)))
	}
	for key, want := range n.PodRows {
		p, ok := got[key]
		if !ok {
			diffs = append(diffs, "--pods lacks pod "+key)
			continue
		}
		diffs = appendQuantity(diffs, key+" cpu requests", want.CPURequests, p.Requests[corev1.ResourceCPU])
		diffs = appendQuantity(diffs, key+" cpu limits", want.CPULimits, p.Limits[corev1.ResourceCPU])
		diffs = appendQuantity(diffs, key+" memory requests", want.MemoryRequests, p.Requests[corev1.ResourceMemory])
		diffs = appendQuantity(diffs, key+" memory limits", want.MemoryLimits, p.Limits[corev1.ResourceMemory])
		for _, pc := range []struct {
			what      string
			got, want int64
		}{
			{"cpu requests %", p.RequestsPercent[corev1.ResourceCPU], want.CPURequestsPercent},
			{"cpu limits %", p.LimitsPercent[corev1.ResourceCPU], want.CPULimitsPercent},
			{"memory requests %", p.RequestsPercent[corev1.ResourceMemory], want.MemoryRequestsPercent},
			{"memory limits %", p.LimitsPercent[corev1.ResourceMemory], want.MemoryLimitsPercent},
		} {
			if pc.got != pc.want {
				diffs = append(diffs, fmt.Sprintf("pod %s %s = %d, kubectl %d", key, pc.what, pc.got, pc.want))
			}
		}
	}
	return diffs
}

func appendQuantity(diffs []string, what string, want, got resource.Quantity) []string {
	if want.Cmp(got) != 0 {
		return append(diffs, fmt.Sprintf("%s = %s, kubectl %s", what, got.String(), want.String()))
	}
	return diffs
}

func appendPercent(diffs []string, what string, want, got *int64) []string {
	if want == nil {
		return diffs
	}
	if got == nil || *got != *want {
		g := "none"
		if got != nil {
			g = strconv.FormatInt(*got, 10)
		}
		return append(diffs, fmt.Sprintf("%s = %s, kubectl %d", what, g, *want))
	}
	return diffs
}
