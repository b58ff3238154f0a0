package monitoring

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/internal/metricsref"
	agentmetrics "github.com/gleaner-sh/gleaner/pkg/agent/metrics"

	// The manager's binary links these; their packages register controller-runtime's and client-go's metrics
	// (controller_runtime_*, workqueue_*, rest_client_*, leader_election_*) in ctrlmetrics.Registry.
	_ "github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/test/ci"
)

const root = "../.."

// TestEveryQueryParses runs promtool check rules on the rule file, and on a rule file made of every dashboard query
// as a recording rule: promtool parses each expression with Prometheus's own parser.
func TestEveryQueryParses(t *testing.T) {
	promtool := tool(t, "promtool")
	check := func(path string) {
		t.Helper()
		out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", path, err, out)
		}
	}
	check(filepath.Join(root, RulesPath))

	d, err := LoadDashboard(root)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := DashboardQueries(d, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	f := RuleFile{Groups: []RuleGroup{{Name: "dashboard"}}}
	for i, q := range qs {
		f.Groups[0].Rules = append(f.Groups[0].Rules, Rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: q.Expr})
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	check(path)
}

// A broken expression must fail the check above: promtool is really parsing.
func TestPromtoolRefusesABrokenExpression(t *testing.T) {
	promtool := tool(t, "promtool")
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(path, []byte("groups:\n- name: x\n  rules:\n  - record: x:y\n    expr: sum by (node (up)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err == nil {
		t.Errorf("promtool accepted an expression with unbalanced parentheses:\n%s", out)
	}
}

// alertTests is promtool's unit test file of the alerts (rules_test.yaml's header says what it holds).
const alertTests = "testdata/rules_test.yaml"

// TestAlertRules runs promtool test rules on the alerts' unit tests: each tested alert fires when, and only when,
// the file says, with the labels and the texts it gives; and an expectation that does not hold fails, so promtool
// is really comparing.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	if out, err := exec.Command(promtool, "test", "rules", alertTests).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", alertTests, err, out)
	}

	b, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs(filepath.Join(root, RulesPath))
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(b), "../../../"+RulesPath, rules, 1)
	wrong = strings.Replace(wrong, "node: node-1", "node: node-2", 1)
	path := filepath.Join(t.TempDir(), "wrong_test.yaml")
	if err := os.WriteFile(path, []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err == nil {
		t.Errorf("promtool test rules passed a test expecting the alert for the wrong node:\n%s", out)
	}
}

// TestEveryMetricExists holds every metric name the queries use to one that Gleaner's binaries register (the
// catalog of internal/metricsref), one that controller-runtime or client-go registers in the manager's registry, one
// of the agent's registry (Go runtime and process collectors), or Prometheus's own up: a renamed metric fails here.
// None may be a deprecated name: the dashboard and the alerts move to a replacement when it comes.
func TestEveryMetricExists(t *testing.T) {
	qs, err := All(root, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := metricsref.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	gleaner := map[string]bool{}
	for _, f := range catalog {
		gleaner[f.Name] = true
	}
	agent := agentmetrics.New()
	agent.RegisterCacheSize(func() (int, int64) { return 0, 0 })
	known := func(name string) bool {
		return name == "up" || gleaner[name] || registered(ctrlmetrics.Registry, name) || registered(agent.Registry, name)
	}
	for _, q := range qs {
		names := MetricNames(q.Expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", q.ID, q.Expr)
		}
		for _, n := range names {
			base, ok := histogramBase(n)
			if !ok || !known(base) {
				base = n
			}
			if repl, old := metricsref.Deprecated[base]; old {
				t.Errorf("%s uses %s, which is deprecated: use %v: %q", q.ID, base, repl, q.Expr)
			}
			if !known(base) {
				t.Errorf("%s uses %s, which nothing Gleaner runs registers: %q", q.ID, n, q.Expr)
			}
		}
	}
}

// histogramBase is the histogram name of one of its series' names (_bucket, _sum, _count).
func histogramBase(name string) (string, bool) {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok {
			return b, true
		}
	}
	return "", false
}

// registered reports whether reg has a metric called name: registering another one of that name fails.
func registered(reg prometheus.Registerer, name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of " + name})
	if err := reg.Register(probe); err != nil {
		return true
	}
	reg.Unregister(probe)
	return false
}

func TestMetricNames(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`sum by (node) (increase(a_total{job="x", result=~"e|k"}[10m])) > 5`, []string{"a_total"}},
		{`histogram_quantile(0.99, sum(rate(h_bucket{l="sum(x)"}[5m])) by (le)) / 1e3`, []string{"h_bucket"}},
		{`time() - b{n=~"$node"} > 300 and on (node) c offset 5m unless ignoring(x) group_left(y) d`, []string{"b", "c", "d"}},
		{`absent(up{job="m"} == 1) or vector(0) * 2^30`, []string{"up"}},
		{`sum without (pod) (ns:rec:rate5m)`, []string{"ns:rec:rate5m"}},
	} {
		if got := MetricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("MetricNames(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	braces        = regexp.MustCompile(`\{[^}]*\}`)
	brackets      = regexp.MustCompile(`\[[^\]]*\]`)
	grouping      = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	token         = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords      = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true,
		"start": true, "end": true, "atan2": true}
)

// MetricNames are the metric names an expression selects, sorted: its identifiers that are neither functions nor
// keywords, once strings, label matchers, ranges and grouping labels are taken out.
func MetricNames(expr string) []string {
	s := stringLiteral.ReplaceAllString(expr, `""`)
	s = braces.ReplaceAllString(s, " ")
	s = brackets.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, loc := range token.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if tok[0] >= '0' && tok[0] <= '9' || keywords[strings.ToLower(tok)] {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		seen[tok] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestRulesSayWhatToDo: every alert waits (for), has a severity, a summary, a description and a runbook that is a
// section of docs/operations.md.
func TestRulesSayWhatToDo(t *testing.T) {
	f, err := LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(string(ops))
	alerts := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.For == "" {
				t.Errorf("alert %s has no for: one bad scrape would page", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s", r.Alert, a)
				}
			}
			doc, anchor, ok := strings.Cut(r.Annotations["runbook"], "#")
			if !ok || doc != "docs/operations.md" || !anchors[anchor] {
				t.Errorf("alert %s: runbook %q is not a section of docs/operations.md", r.Alert, r.Annotations["runbook"])
			}
		}
	}
	for _, want := range []string{"GleanerNodeMetricStale", "GleanerNodeDegraded", "GleanerEvictionBurst", "GleanerAgentDown", "GleanerManagerDown", "GleanerNodeSLONotApplied"} {
		if !slices.ContainsFunc(f.Groups[0].Rules, func(r Rule) bool { return r.Alert == want }) {
			t.Errorf("no alert %s", want)
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts")
	}
}

var heading = regexp.MustCompile(`(?m)^#+\s+(.*)$`)

// headingAnchors are the anchors GitHub gives the headings of a Markdown document.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// TestDashboardShape: the data source is a variable every panel and query uses, there is a node variable, and
// every panel but the rows has queries.
func TestDashboardShape(t *testing.T) {
	d, err := LoadDashboard(root)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["node"] != "query" {
		t.Errorf("variables %v, want datasource (a data source) and node (a query)", vars)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard has no uid or title")
	}
	viaVariable := func(ds *Datasource) bool { return ds != nil && ds.UID == "${datasource}" }
	nodePanels := 0
	for _, p := range d.Panels {
		if p.GridPos == nil {
			t.Errorf("panel %q has no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || !viaVariable(p.Datasource) {
			t.Errorf("panel %q: %d queries, data source %+v", p.Title, len(p.Targets), p.Datasource)
		}
		for _, tg := range p.Targets {
			if !viaVariable(tg.Datasource) || tg.Expr == "" {
				t.Errorf("panel %q %s: data source %+v, expr %q", p.Title, tg.RefID, tg.Datasource, tg.Expr)
			}
			if strings.Contains(tg.Expr, `node=~"$node"`) {
				nodePanels++
			}
		}
	}
	if nodePanels == 0 {
		t.Error("no query uses the node variable")
	}
}

// TestEmptyListNamesQueries: every query the e2e test lets be empty exists.
func TestEmptyListNamesQueries(t *testing.T) {
	qs, err := All(root, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	for id := range EmptyOnHealthyCluster {
		if !slices.ContainsFunc(qs, func(q Query) bool { return q.ID == id }) {
			t.Errorf("EmptyOnHealthyCluster names %q, which is no query", id)
		}
	}
	for id := range ActiveOnLocalCluster {
		if !slices.ContainsFunc(qs, func(q Query) bool { return q.ID == id && q.Base != "" }) {
			t.Errorf("ActiveOnLocalCluster names %q, which is no alert", id)
		}
	}
}

func TestBaseOf(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{`up{job="a"} == 0`, `up{job="a"}`},
		{`absent(up{job="m"} == 1)`, `up{job="m"}`},
		{"sum by (node) (rate(x[10m]))\n  > 0.5", `sum by (node) (rate(x[10m]))`},
		{`time() - t > 3e2`, `time() - t`},
	} {
		if got, err := BaseOf(tt.expr); err != nil || got != tt.want {
			t.Errorf("BaseOf(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
	if _, err := BaseOf(`up{job="a"}`); err == nil {
		t.Error("an alert without a comparison was accepted")
	}
}

func TestSubstitute(t *testing.T) {
	got, err := Substitute(`rate(x{node=~"$node"}[$__rate_interval]) + y{n="${node}"}`, "a.b")
	if want := `rate(x{node=~"a.b"}[1m]) + y{n="a.b"}`; err != nil || got != want {
		t.Errorf("Substitute = %q, %v; want %q", got, err, want)
	}
	if _, err := Substitute(`x{pod="$pod"}`, "n"); err == nil || !strings.Contains(err.Error(), "$pod") {
		t.Errorf("an unknown variable: %v", err)
	}
}

// tool returns the path of a hack/tool.sh tool, building it once; where it cannot be built the test skips, and
// fails under CI.
func tool(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "tool.sh"), name).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		ci.Skipf(t, "building %s with hack/tool.sh: %v\n%s", name, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// documentedScrapeConfig returns the scrape configuration docs/operations.md#monitoring gives, as written there.
func documentedScrapeConfig(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Monitoring\n")
	if !ok {
		t.Fatal("docs/operations.md has no Monitoring section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed || !strings.Contains(block, "scrape_configs:") {
		t.Fatalf("the Monitoring section has no yaml block with scrape_configs:\n%s", block)
	}
	return block
}

// TestDocumentedScrapeConfig: the scrape configuration docs/operations.md#monitoring gives is one Prometheus
// accepts (promtool check config), with the job names the queries select.
func TestDocumentedScrapeConfig(t *testing.T) {
	promtool := tool(t, "promtool")
	block := documentedScrapeConfig(t)
	for _, job := range []string{ManagerJob, AgentJob} {
		if !strings.Contains(block, "job_name: "+job+"\n") {
			t.Errorf("the documented scrape configuration has no job %s", job)
		}
	}
	// promtool checks that the token file exists; the configuration names the one in-cluster pods get.
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	block = strings.ReplaceAll(block, inClusterTokenFile, token)
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check config of the documented scrape configuration: %v\n%s", err, out)
	}
}

// inClusterTokenFile is where a pod's service-account token is, the file the documented configuration reads.
const inClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
