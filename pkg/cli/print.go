package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// printEncoded writes v to w as JSON or YAML when format asks for one, and says whether it did.
func printEncoded(w io.Writer, v any, format string) (bool, error) {
	var b []byte
	var err error
	switch format {
	case outputJSON:
		if b, err = json.MarshalIndent(v, "", "    "); err == nil {
			b = append(b, '\n')
		}
	case outputYAML:
		if b, err = json.Marshal(v); err == nil {
			b, err = yaml.JSONToYAML(escapeForYAML(b))
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("encoding as %s: %w", format, err)
	}
	_, err = w.Write(b)
	return true, err
}

// escapeForYAML writes the characters YAML does not allow in a document as JSON escapes. encoding/json leaves DEL,
// the C1 controls and U+FFFE/U+FFFF as they are, and the YAML parser behind sigs.k8s.io/yaml refuses them: a node
// annotation or config name holding one made -o yaml fail (found by FuzzExplanation). Outside strings JSON is
// ASCII, so every replacement is inside a string.
func escapeForYAML(j []byte) []byte {
	allowed := func(r rune) bool {
		return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7e || r == 0x85 ||
			r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
	}
	var b strings.Builder
	for _, r := range string(j) {
		if allowed(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return []byte(b.String())
}

// printReport writes r to w as out asks; -o name lists the nodes.
func printReport(w io.Writer, r Report, out output, clk clock.PassiveClock) error {
	names := func() []string {
		var n []string
		for _, node := range r.Nodes {
			n = append(n, "node/"+node.Name)
		}
		return n
	}
	if done, err := printStructured(w, r, names, out); done {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if hasPods(r) {
		printPods(tw, r, out, clk)
		if err := tw.Flush(); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	printResources(tw, r, out)
	return tw.Flush()
}

func hasPods(r Report) bool {
	for _, n := range r.Nodes {
		if len(n.Pods) > 0 {
			return true
		}
	}
	return false
}

// printResources prints one line per node and resource, the rows of kubectl's "Allocated resources".
func printResources(w io.Writer, r Report, out output) {
	wide := out.wide()
	header := "NODE\tRESOURCE\tREQUESTS\tLIMITS"
	if wide {
		header += "\tALLOCATABLE\tPODS"
	}
	out.header(w, header)
	for _, n := range r.Nodes {
		for _, res := range n.Resources {
			line := fmt.Sprintf("%s\t%s\t%s\t%s", n.Name, res.Name, withPercent(res.Requests, res.RequestsPercent), withPercent(res.Limits, res.LimitsPercent))
			if wide {
				alloc := "-"
				if q, ok := n.Allocatable[res.Name]; ok {
					alloc = q.String()
				}
				line += fmt.Sprintf("\t%s\t%d", alloc, n.PodCount)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// printPods prints the counted pods' rows, with kubectl's columns.
func printPods(w io.Writer, r Report, out output, clk clock.PassiveClock) {
	wide := out.wide()
	header := "NODE\tNAMESPACE\tPOD\tCPU REQUESTS\tCPU LIMITS\tMEMORY REQUESTS\tMEMORY LIMITS\tAGE"
	if wide {
		header += "\tQOS\tPHASE\tOTHER REQUESTS"
	}
	out.header(w, header)
	for _, n := range r.Nodes {
		for _, p := range n.Pods {
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", n.Name, p.Namespace, p.Name,
				podCell(p.Requests, p.RequestsPercent, corev1.ResourceCPU), podCell(p.Limits, p.LimitsPercent, corev1.ResourceCPU),
				podCell(p.Requests, p.RequestsPercent, corev1.ResourceMemory), podCell(p.Limits, p.LimitsPercent, corev1.ResourceMemory),
				age(clk, p.Created.Time))
			if wide {
				line += fmt.Sprintf("\t%s\t%s\t%s", p.QoSClass, p.Phase, otherRequests(p.Requests))
			}
			fmt.Fprintln(w, line)
		}
	}
}

func withPercent(q resource.Quantity, p *int64) string {
	if p == nil {
		return q.String()
	}
	return fmt.Sprintf("%s (%d%%)", q.String(), *p)
}

func podCell(list corev1.ResourceList, percents map[corev1.ResourceName]int64, name corev1.ResourceName) string {
	q := list[name]
	if p, ok := percents[name]; ok {
		return withPercent(q, &p)
	}
	return q.String()
}

// otherRequests lists a pod's requests other than cpu and memory, "name=quantity" sorted by name, or "-".
func otherRequests(list corev1.ResourceList) string {
	var parts []string
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			parts = append(parts, string(name)+"="+q.String())
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
