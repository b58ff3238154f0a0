package chart

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestSchemaFlags: the schema's manager.flags and agent.flags have every flag of the binary but those the
// templates set, and nothing else, refusing other keys.
func TestSchemaFlags(t *testing.T) {
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Properties map[string]struct {
			Properties map[string]struct {
				AdditionalProperties json.RawMessage            `json:"additionalProperties"`
				Properties           map[string]json.RawMessage `json:"properties"`
			} `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("the schema is no JSON: %v", err)
	}
	for _, c := range Components {
		flags := root.Properties[c].Properties["flags"]
		if string(flags.AdditionalProperties) != "false" {
			t.Errorf("%s.flags takes keys that are no flags", c)
		}
		n := 0
		FlagSet(c).VisitAll(func(f *pflag.Flag) {
			_, in := flags.Properties[f.Name]
			set := slices.Contains(SetByTemplates[c], f.Name)
			if in == set {
				t.Errorf("--%s of gleaner-%s: in %s.flags %v, set by the templates %v; want exactly one", f.Name, c, c, in, set)
			}
			n++
		})
		if len(flags.Properties)+len(SetByTemplates[c]) != n {
			t.Errorf("%s.flags has %d keys and the templates set %d flags; the binary has %d", c, len(flags.Properties), len(SetByTemplates[c]), n)
		}
	}
}

// weird is a flag value of a type the schema does not know.
type weird struct{}

func (weird) String() string   { return "" }
func (weird) Set(string) error { return nil }
func (weird) Type() string     { return "weird" }

// TestUnknownFlagType: a flag of a type the schema cannot describe is an error naming the flag and where to add
// it, not a schema that lets anything through.
func TestUnknownFlagType(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Var(weird{}, "odd", "")
	_, err := flagSchema(fs.Lookup("odd"))
	if err == nil || !strings.Contains(err.Error(), `--odd: no schema for a flag of type "weird": add it to internal/chart`) {
		t.Errorf("got %v", err)
	}
}
