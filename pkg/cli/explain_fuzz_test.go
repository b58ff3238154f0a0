package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// FuzzExplanation: whatever a NodeResourceExplanation's status holds (anyone who may write the object can put
// there what its schema lets through), kubectl glean explain either cannot decode it or prints it in every format;
// it never panics.
func FuzzExplanation(f *testing.F) {
	_, exp := explained("n", "1200")
	good, err := json.Marshal(exp.Status)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(good),
		"", "{}", "null", "[]", `{"resources":[{}]}`, `{"resources":[{"resource":"kubernetes.io/batch-memory","value":"9e18"}]}`,
		`{"resources":[{"resource":"kubernetes.io/batch-cpu","value":"-1","terms":[{"name":"x","value":"1e-9"}],"zones":{"":"0"}}]}`,
		`{"updateTime":"9999-12-31T23:59:59Z","resources":[{"metricTime":"0001-01-01T00:00:00Z","value":"0"}]}`,
	} {
		f.Add(s)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, raw string) {
		node, _ := explained("n", "1200")
		var st slov1alpha1.NodeResourceExplanationStatus
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return
		}
		e := explanationOf(node, &st)
		for _, format := range []string{outputTable, outputJSON, outputYAML} {
			if err := printExplanations(io.Discard, []Explanation{e}, output{format: format}, clk); err != nil {
				t.Fatalf("printing %q as %q: %v", raw, format, err)
			}
		}
	})
}

// TestExplainYAMLWithControlCharacters: a DEL or C1 control character in the explanation (its strategy here)
// used to fail -o yaml with "control characters are not allowed"; it is printed escaped, and reads back.
func TestExplainYAMLWithControlCharacters(t *testing.T) {
	node, exp := explained("n", "1200")
	// (Not NEL, U+0085: YAML allows it, and the emitter writes it as a line break that reads back as a space.)
	exp.Status.Strategy = "nodeConfigs a\x7fb\u0080c\u009fd\ufffee"
	e := explanationOf(node, &exp.Status)
	var out bytes.Buffer
	if err := printExplanations(&out, []Explanation{e}, output{format: outputYAML}, clocktesting.NewFakePassiveClock(time.Now())); err != nil {
		t.Fatalf("-o yaml: %v", err)
	}
	var back []Explanation
	if err := yaml.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 1 || back[0].Explanation.Strategy != exp.Status.Strategy {
		t.Errorf("-o yaml printed %q, which reads back as %+v, %v", out.String(), back, err)
	}
}
