package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/util/jsonpath"
)

// The formats of -o.
const (
	outputTable    = ""
	outputWide     = "wide"
	outputJSON     = "json"
	outputYAML     = "yaml"
	outputName     = "name"
	outputJSONPath = "jsonpath"
)

// outputFlags are a verb's -o and, where it prints a table, --no-headers. Every verb takes json, yaml and
// jsonpath=TEMPLATE (kubectl's JSONPath, over the object -o json prints); a verb takes wide where it has a wider
// table, name where it lists objects (kubectl's kind/name lines), and --no-headers where it prints a table.
type outputFlags struct {
	wide, name, table bool
	// plain is what the verb prints without -o, for the flag's help and errors.
	plain string

	value     string
	noHeaders bool
}

// add binds the flags to fl.
func (o *outputFlags) add(fl *pflag.FlagSet) {
	fl.StringVarP(&o.value, "output", "o", "", "output format: "+strings.Join(o.formats(), ", ")+" (default: "+o.plain+")")
	if o.table {
		fl.BoolVar(&o.noHeaders, "no-headers", false, "print the table without its header line")
	}
}

func (o *outputFlags) formats() []string {
	var f []string
	if o.wide {
		f = append(f, outputWide)
	}
	if o.name {
		f = append(f, outputName)
	}
	return append(f, outputJSON, outputYAML, "jsonpath=TEMPLATE")
}

// output is a parsed -o with --no-headers.
type output struct {
	format    string
	noHeaders bool
	path      *jsonpath.JSONPath
}

func (o output) wide() bool { return o.format == outputWide }

// parse checks the flags against what the verb takes.
func (o *outputFlags) parse() (output, error) {
	out := output{format: o.value, noHeaders: o.noHeaders}
	switch v := o.value; {
	case v == outputTable, v == outputJSON, v == outputYAML, v == outputWide && o.wide, v == outputName && o.name:
		return out, nil
	case strings.HasPrefix(v, outputJSONPath+"="):
		tmpl := strings.TrimPrefix(v, outputJSONPath+"=")
		if tmpl == "" {
			return out, errors.New("-o jsonpath= needs a template, e.g. -o jsonpath={.nodes[*].name}")
		}
		// As kubectl's --allow-missing-template-keys (true by default): a field left out of the JSON when it is
		// empty (a percentage without allocatable, say) prints nothing rather than failing the command.
		p := jsonpath.New("output").AllowMissingKeys(true)
		if err := p.Parse(tmpl); err != nil {
			return out, fmt.Errorf("-o %s: %w", v, err)
		}
		out.format, out.path = outputJSONPath, p
		return out, nil
	}
	return out, fmt.Errorf("-o %q: want %s (or nothing for %s)", o.value, strings.Join(o.formats(), ", "), o.plain)
}

// printStructured writes v as out asks when that is json, yaml, jsonpath or name (names gives the kind/name lines),
// and says whether it did; otherwise the verb prints its table or text.
func printStructured(w io.Writer, v any, names func() []string, out output) (bool, error) {
	switch out.format {
	case outputJSON, outputYAML:
		return printEncoded(w, v, out.format)
	case outputName:
		for _, n := range names() {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return true, err
			}
		}
		return true, nil
	case outputJSONPath:
		// The template sees the object as -o json prints it: field names from the JSON tags, quantities as strings.
		b, err := json.Marshal(v)
		if err != nil {
			return true, fmt.Errorf("encoding for jsonpath: %w", err)
		}
		var data any
		if err := json.Unmarshal(b, &data); err != nil {
			return true, fmt.Errorf("decoding for jsonpath: %w", err)
		}
		if err := out.path.Execute(w, data); err != nil {
			return true, fmt.Errorf("-o jsonpath: %w", err)
		}
		return true, nil
	}
	return false, nil
}

// header writes a table's header line unless --no-headers asked it away.
func (o output) header(w io.Writer, line string) {
	if !o.noHeaders {
		fmt.Fprintln(w, line)
	}
}
