package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sizingAnnotation names the row of docs/operations.md a workload's resources come from.
const sizingAnnotation = "gleaner.sh/sizing"

// sizingRow is one row of a sizing table.
type sizingRow struct {
	name          string
	isDefault     bool
	cpuRequest    string
	memoryRequest string
	memoryLimit   string
	from          string
}

// sizingTable reads the table under heading in docs/operations.md's "## Sizing".
func sizingTable(t *testing.T, heading string) map[string]sizingRow {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/operations.md has no %q section", heading)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	var header []string
	rows := map[string]sizingRow{}
	name := regexp.MustCompile("^`([a-z-]+)`( \\(default\\))?$")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if header == nil {
			header = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) != len(header) {
			t.Fatalf("%s: row %q has %d cells, the header %d", heading, line, len(cells), len(header))
		}
		col := map[string]string{}
		for i, h := range header {
			col[h] = cells[i]
		}
		m := name.FindStringSubmatch(col["row"])
		if m == nil {
			t.Fatalf("%s: the row cell %q is not `name` or `name` (default)", heading, col["row"])
		}
		rows[m[1]] = sizingRow{
			name: m[1], isDefault: m[2] != "", cpuRequest: col["CPU request"], memoryRequest: col["memory request"],
			memoryLimit: col["memory limit"], from: col["from"],
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", heading)
	}
	return rows
}

// expectRow checks that a workload's annotation names a row of table and that its container's resources are that
// row's, and returns the row.
func expectRow(t *testing.T, what string, annotations map[string]string, c corev1.Container, table map[string]sizingRow) sizingRow {
	t.Helper()
	name := annotations[sizingAnnotation]
	row, ok := table[name]
	if !ok {
		t.Fatalf("%s: annotation %s=%q names no row of docs/operations.md", what, sizingAnnotation, name)
	}
	for _, q := range []struct {
		what string
		list corev1.ResourceList
		res  corev1.ResourceName
		want string
	}{
		{"CPU request", c.Resources.Requests, corev1.ResourceCPU, row.cpuRequest},
		{"memory request", c.Resources.Requests, corev1.ResourceMemory, row.memoryRequest},
		{"memory limit", c.Resources.Limits, corev1.ResourceMemory, row.memoryLimit},
	} {
		want, err := resource.ParseQuantity(q.want)
		if err != nil {
			t.Fatalf("docs/operations.md, row %s: %s %q: %v", name, q.what, q.want, err)
		}
		if got, ok := q.list[q.res]; !ok || got.Cmp(want) != 0 {
			t.Errorf("%s claims row %s: %s is %s, the table says %s", what, name, q.what, got.String(), q.want)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("%s has a CPU limit; docs/operations.md says why it has none", what)
	}
	if !strings.HasPrefix(row.from, "measured") && !strings.HasPrefix(row.from, "interpolated") && !strings.HasPrefix(row.from, "extrapolated") {
		t.Errorf("docs/operations.md, row %s: the from column must say measured, interpolated or extrapolated, got %q", name, row.from)
	}
	return row
}

// TestSizingMatchesTheTable: config/default's manager and agent carry the resources of the row of
// docs/operations.md they name (the row marked default), each component of config/sizing those of its own row,
// and every row of the tables is installed by config/default or a component.
func TestSizingMatchesTheTable(t *testing.T) {
	managers := sizingTable(t, "### gleaner-manager")
	agents := sizingTable(t, "### gleaner-agent")
	used := map[string]bool{}

	def := build(t, filepath.Join(root, "config", "default"))
	m, a := def.manager(t), def.agent(t)
	for _, w := range []struct {
		what  string
		ann   map[string]string
		c     corev1.Container
		table map[string]sizingRow
	}{
		{"config/default's gleaner-manager", m.Annotations, m.Spec.Template.Spec.Containers[0], managers},
		{"config/default's gleaner-agent", a.Annotations, a.Spec.Template.Spec.Containers[0], agents},
	} {
		row := expectRow(t, w.what, w.ann, w.c, w.table)
		if !row.isDefault {
			t.Errorf("%s uses row %s, which docs/operations.md does not mark (default)", w.what, row.name)
		}
		for name, r := range w.table {
			if r.isDefault && name != row.name {
				t.Errorf("docs/operations.md marks row %s (default), but %s uses %s", name, w.what, row.name)
			}
		}
		used[w.what[len("config/default's "):]+"/"+row.name] = true
	}

	components, err := filepath.Glob(filepath.Join(root, "config", "sizing", "*", "kustomization.yaml"))
	if err != nil || len(components) == 0 {
		t.Fatalf("no components in config/sizing: %v", err)
	}
	for _, k := range components {
		dir := filepath.Dir(k)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			b := overlay(t, filepath.Join(root, "config", "default"), dir)
			var row sizingRow
			switch {
			case strings.HasPrefix(name, "manager-"):
				m := b.manager(t)
				row = expectRow(t, "gleaner-manager with "+name, m.Annotations, m.Spec.Template.Spec.Containers[0], managers)
				used["gleaner-manager/"+row.name] = true
			case strings.HasPrefix(name, "agent-"):
				a := b.agent(t)
				row = expectRow(t, "gleaner-agent with "+name, a.Annotations, a.Spec.Template.Spec.Containers[0], agents)
				used["gleaner-agent/"+row.name] = true
			default:
				t.Fatalf("config/sizing/%s: a component's name starts with manager- or agent-", name)
			}
			if !strings.HasSuffix(name, "-"+row.name) {
				t.Errorf("config/sizing/%s sets row %s; name it after its row", name, row.name)
			}
		})
	}
	for what, table := range map[string]map[string]sizingRow{"gleaner-manager": managers, "gleaner-agent": agents} {
		for name := range table {
			if !used[what+"/"+name] {
				t.Errorf("docs/operations.md's %s row %s is neither config/default's nor a component's of config/sizing", what, name)
			}
		}
	}
}
