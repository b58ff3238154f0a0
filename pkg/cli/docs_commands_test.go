package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// documentedIn are the files whose `kubectl glean` command lines TestDocumentedCommandsRun runs: what an operator
// copies from the README, the docs (the runbook among them) and the alerts' annotations.
var documentedIn = []string{"../../README.md", "../../docs/*.md", "../../config/monitoring/*.yaml"}

// examplePlaceholders are the words the docs write for a value the reader fills in, and what the test fills in.
var examplePlaceholders = map[string]string{"NODE": "doc-node", "POD": "doc-pod"}

// exampleNodes are the node names the docs' sample outputs show; the test creates them, like doc-node, with an
// explanation. Any other word that reaches the API server as a name is taken literally, and must not be "not found".
var exampleNodes = []string{"node-1", "localhost"}

var (
	inlineCommand = regexp.MustCompile("`(kubectl glean(?: [^`]*)?)`")
	shellCommand  = regexp.MustCompile(`^\s*(?:\$ )?(kubectl glean(?: .*)?)$`)
	template      = regexp.MustCompile(`\{\{\s*\$labels\.(\w+)\s*\}\}`)
	// shellComment is what a shell drops from a fenced line: a # after a blank, and the rest of the line.
	shellComment = regexp.MustCompile(`\s+#.*$`)
)

// documentedCommand is one `kubectl glean` command line found in a file.
type documentedCommand struct {
	where, line string
}

// documentedCommands finds the command lines in code spans (which may wrap across lines) and in fenced blocks.
func documentedCommands(t *testing.T) []documentedCommand {
	t.Helper()
	var out []documentedCommand
	for _, pattern := range documentedIn {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no files match %s: %v", pattern, err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			where := strings.TrimPrefix(file, "../../")
			fenced := false
			for i, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "```") {
					fenced = !fenced
					continue
				}
				if m := shellCommand.FindStringSubmatch(line); fenced && m != nil {
					out = append(out, documentedCommand{where: where + ":" + strconv.Itoa(i+1), line: shellComment.ReplaceAllString(m[1], "")})
				}
			}
			joined := regexp.MustCompile(`\s*\n\s*`).ReplaceAllString(string(b), " ")
			for _, m := range inlineCommand.FindAllStringSubmatch(joined, -1) {
				out = append(out, documentedCommand{where: where, line: m[1]})
			}
		}
	}
	return out
}

// expand turns a documented line into the argument lists to run: templates and placeholders filled in, "a|b"
// alternatives (`top nodes\|pods` in a table) run each, optional brackets and "..." dropped.
func expand(t *testing.T, c documentedCommand) [][]string {
	t.Helper()
	line := strings.ReplaceAll(c.line, `\|`, "|")
	line = template.ReplaceAllStringFunc(line, func(s string) string {
		return strings.ToUpper(template.FindStringSubmatch(s)[1])
	})
	runs := [][]string{nil}
	for _, word := range strings.Fields(strings.TrimPrefix(line, "kubectl glean")) {
		word = strings.TrimSuffix(strings.Trim(word, "[]"), "...")
		alternatives := strings.Split(word, "|")
		if regexp.MustCompile(`^[A-Z][A-Z_]*$`).MatchString(word) {
			v, ok := examplePlaceholders[word]
			if !ok {
				t.Errorf("%s: %q: placeholder %s has no example value in examplePlaceholders", c.where, c.line, word)
			}
			alternatives = []string{v}
		}
		var next [][]string
		for _, r := range runs {
			for _, a := range alternatives {
				next = append(next, append(append([]string(nil), r...), a))
			}
		}
		runs = next
	}
	return runs
}

// TestDocumentedCommandsRun runs every `kubectl glean` command line of the README, the docs and the alert texts
// against a real API server, as an operator would copy it, and fails on any error: a usage error, or a literal word
// taken for a name that is "not found" (once: the runbook and the GleanerNodeDegraded alert said
// `kubectl glean explain node NODE`, which fails with `node "node" not found`). A line that only names a command
// (`kubectl glean explain` in a sentence) must name one that exists.
func TestDocumentedCommandsRun(t *testing.T) {
	e := env.Start(t)
	for _, name := range append([]string{examplePlaceholders["NODE"]}, exampleNodes...) {
		createExplained(t, e, name, "1200")
	}
	commands := documentedCommands(t)
	if len(commands) < 20 {
		t.Fatalf("found only %d documented command lines: is the extraction broken?", len(commands))
	}
	ran := map[string]bool{}
	for _, c := range commands {
		for _, args := range expand(t, c) {
			key := strings.Join(args, " ")
			if ran[key] {
				continue
			}
			ran[key] = true
			root := NewRootCommand(Streams{}, clocktesting.NewFakeClock(time.Now()))
			if found, rest, err := root.Find(args); err == nil && len(rest) == 0 && found.Args != nil && found.Args(found, nil) != nil {
				// The name of a command that needs arguments: it must exist, which Find has just said.
				continue
			}
			_, errOut, err := gleanAt(t, time.Now(), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
			if err != nil {
				t.Errorf("%s: `%s` fails: %v\n%s", c.where, c.line, err, errOut)
			}
		}
	}
	t.Logf("ran %d distinct command lines", len(ran))
}
