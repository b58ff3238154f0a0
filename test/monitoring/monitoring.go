// Package monitoring reads Gleaner's Grafana dashboard and Prometheus alerting rules (config/monitoring) for the
// tests that check their queries: monitoring_test.go here (unit suite) holds every expression to parse with promtool
// and to name only metrics Gleaner or a library it links registers; test/e2e/monitoring_test.go evaluates each one
// in a real Prometheus scraping the local cluster.
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Paths of the dashboard and the rules, relative to the repository root.
const (
	DashboardPath = "config/monitoring/gleaner-dashboard.json"
	RulesPath     = "config/monitoring/gleaner-rules.yaml"
)

// The scrape jobs the queries select (docs/operations.md#monitoring gives their configuration).
const (
	ManagerJob = "gleaner-manager"
	AgentJob   = "gleaner-agent"
)

// RateInterval is what the tests put for Grafana's $__rate_interval: a minute, at least four scrapes of any sane
// scrape interval, as Grafana's own choice would be.
const RateInterval = "1m"

// Query is one PromQL expression of the dashboard or the rules.
type Query struct {
	// ID names it: "panel <title> <refId>", "variable <name>" or "alert <name>".
	ID string
	// Expr is the expression, with the dashboard's variables substituted.
	Expr string
	// Base is, for an alert, its expression without the final threshold comparison (and without absent()): what
	// the alert compares, which has data on a healthy cluster where the alert itself has none. Empty otherwise.
	Base string
}

// Dashboard is the part of Grafana's dashboard model the tests read.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel (a row has no targets).
type Panel struct {
	ID         int           `json:"id"`
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Datasource *Datasource   `json:"datasource"`
	Targets    []Target      `json:"targets"`
	GridPos    *GridPosition `json:"gridPos"`
}

// GridPosition places a panel.
type GridPosition struct {
	H, W, X, Y int
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Datasource references the data source a panel or target queries.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
}

// RuleFile is Prometheus's rule-file format.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// LoadDashboard reads the dashboard under root.
func LoadDashboard(root string) (*Dashboard, error) {
	b, err := os.ReadFile(filepath.Join(root, DashboardPath))
	if err != nil {
		return nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	d := &Dashboard{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("parsing the dashboard %s: %w", DashboardPath, err)
	}
	return d, nil
}

// LoadRules reads the rule file under root; a field Prometheus does not know is an error.
func LoadRules(root string) (*RuleFile, error) {
	b, err := os.ReadFile(filepath.Join(root, RulesPath))
	if err != nil {
		return nil, fmt.Errorf("reading the rules: %w", err)
	}
	f := &RuleFile{}
	if err := yaml.UnmarshalStrict(b, f); err != nil {
		return nil, fmt.Errorf("parsing the rules %s: %w", RulesPath, err)
	}
	return f, nil
}

// variable is a Grafana variable reference: $name, ${name} or [[name]].
var variable = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// Substitute replaces the dashboard variables in expr: $node by node (as it is: the queries match it as a regular
// expression, where a node name's dots match themselves too), $__rate_interval and its kin by RateInterval. Any other variable is an error: the tests could not know
// what Grafana would put there.
func Substitute(expr, node string) (string, error) {
	var bad []string
	out := variable.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variable.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		switch name {
		case "node":
			return node
		case "__rate_interval", "__interval", "__range":
			return RateInterval
		}
		bad = append(bad, ref)
		return ref
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("unknown dashboard variables %v in %q", bad, expr)
	}
	return out, nil
}

// labelValues is a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// DashboardQueries returns every PromQL expression of the dashboard, its panels' and its query variables', with
// node for $node.
func DashboardQueries(d *Dashboard, node string) ([]Query, error) {
	var qs []Query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if err2 := json.Unmarshal(v.Query, &s); err2 != nil {
				return nil, fmt.Errorf("variable %s: query is neither an object nor a string: %w", v.Name, err)
			}
			q.Query = s
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
		}
		qs = append(qs, Query{ID: "variable " + v.Name, Expr: m[1]})
	}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			expr, err := Substitute(t.Expr, node)
			if err != nil {
				return nil, fmt.Errorf("panel %q %s: %w", p.Title, t.RefID, err)
			}
			qs = append(qs, Query{ID: "panel " + p.Title + " " + t.RefID, Expr: expr})
		}
	}
	return qs, nil
}

// threshold is an alert's final comparison with a number.
var threshold = regexp.MustCompile(`^(?s)(.*\S)\s*(?:>|<|==|!=|>=|<=)\s*-?[0-9.]+(?:e[+-]?[0-9]+)?\s*$`)

// absent is an alert of the form absent(expr).
var absent = regexp.MustCompile(`^(?s)\s*absent\((.*)\)\s*$`)

// BaseOf is an alert expression without its final comparison with a number, and without absent() around it; an
// expression of another shape is an error (the rule file promises that shape).
func BaseOf(expr string) (string, error) {
	base := expr
	if m := absent.FindStringSubmatch(base); m != nil {
		base = m[1]
	}
	m := threshold.FindStringSubmatch(base)
	if m == nil {
		return "", fmt.Errorf("%q is not <expression> <comparison> <number> or absent() of one", expr)
	}
	return strings.TrimSpace(m[1]), nil
}

// RuleQueries returns the expression of every rule, with its base for the alerts.
func RuleQueries(f *RuleFile) ([]Query, error) {
	var qs []Query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				qs = append(qs, Query{ID: "record " + r.Record, Expr: r.Expr})
				continue
			}
			base, err := BaseOf(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("alert %s: %w", r.Alert, err)
			}
			qs = append(qs, Query{ID: "alert " + r.Alert, Expr: r.Expr, Base: base})
		}
	}
	return qs, nil
}

// All returns every query of the dashboard and the rules under root, with node for $node.
func All(root, node string) ([]Query, error) {
	d, err := LoadDashboard(root)
	if err != nil {
		return nil, err
	}
	qs, err := DashboardQueries(d, node)
	if err != nil {
		return nil, err
	}
	f, err := LoadRules(root)
	if err != nil {
		return nil, err
	}
	rs, err := RuleQueries(f)
	if err != nil {
		return nil, err
	}
	return append(qs, rs...), nil
}

// ActiveOnLocalCluster lists the alerts (by ID) whose condition holds on the e2e suite's local cluster, and why:
// what they watch for is really there, so their expression must return data there and they may be pending or
// firing. The unit test holds every entry to name an alert that exists.
var ActiveOnLocalCluster = map[string]string{
	"alert GleanerNodeSLONotApplied": "the local node cannot grant the agent CAP_SYS_RESOURCE, so its NodeSLO's " +
		"RuntimeHook condition is PermissionDenied (config/local/agent.yaml; TestNodeSLOStatusSaysWhatIsApplied)",
}

// EmptyOnHealthyCluster lists the queries (by ID) that have no data on the e2e suite's healthy cluster, and why:
// every other query must return data there, and an alert's own expression must not (its base must, unless listed
// here). The unit test holds every entry to name a query that exists.
var EmptyOnHealthyCluster = map[string]string{
	"panel Evictions A": "gleaner_agent_evictions_total has no series before the first eviction; " +
		"TestMemoryEvictionSparesPodsUnderABudget checks the counter",
	"alert GleanerEvictionBurst": "no eviction happened (see panel Evictions A)",
	"alert GleanerNodeMetricReportsFailing": "the result=\"error\" series of gleaner_agent_nodemetric_reports_total " +
		"exists only after a failed report",
}
