package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documents are the Markdown files whose relative links must lead somewhere: what a reader follows from the README.
var documents = []string{"*.md", "docs/*.md", "charts/gleaner/*.md"}

var (
	// link is an inline Markdown link or image: [text](target) or [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// notInSlug is what GitHub drops from a heading's text to make its anchor.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}\p{M}\s_-]`)
	// inlineCode is a code span, whose text GitHub keeps in the anchor without the backticks.
	inlineCode = regexp.MustCompile("`([^`]*)`")
)

// TestDocumentLinksResolve: every relative link in the README and docs names a file or directory of the tree, and
// every #anchor one of that document's headings, so a moved section or a renamed file breaks this test, not a
// reader's click.
func TestDocumentLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, pattern := range documents {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d documents: %v", len(files), files)
	}
	for _, p := range linkProblems(root, files) {
		t.Error(p)
	}
}

// TestLinkProblemsCatchBrokenLinks: on a small tree, a missing file, a missing anchor in another document and in the
// same one are reported; links that resolve, external links and links inside code are not.
func TestLinkProblemsCatchBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Title",
		"[ok](docs/a.md) [ok](docs/a.md#the-make-run-step-v2) [ok](#title) [ok](docs/) [ok](https://example.com/x#y)",
		"[missing file](docs/b.md) [missing anchor](docs/a.md#nowhere) [missing here](#nothing)",
		"```",
		"[in code](docs/c.md)",
		"```",
	}, "\n"))
	write("docs/a.md", "# A\n\n## The `make run` step (v2)\n\n[back](../README.md#title)\n")
	got := linkProblems(root, []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs/a.md")})
	want := []string{
		"README.md:3: docs/b.md: no such file",
		"README.md:3: docs/a.md#nowhere: docs/a.md has no heading with that anchor",
		"README.md:3: #nothing: README.md has no heading with that anchor",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("linkProblems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// linkProblems returns one line per relative link of files that leads nowhere, as file:line: target: why.
func linkProblems(root string, files []string) []string {
	anchors := map[string]map[string]bool{} // by file, absolute
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := headingAnchors(file)
		anchors[file] = a
		return a
	}
	var problems []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		rel, _ := filepath.Rel(root, file)
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file", rel, i+1, target))
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if !anchorsOf(dest)[anchor] {
					destRel, _ := filepath.Rel(root, dest)
					problems = append(problems, fmt.Sprintf("%s:%d: %s: %s has no heading with that anchor", rel, i+1, target, destRel))
				}
			}
		}
	}
	return problems
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown file: the text lower-cased, code spans'
// backticks and other punctuation dropped, spaces made hyphens, and -1, -2, ... after a repeated one.
func headingAnchors(file string) map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		text := inlineCode.ReplaceAllString(m[1], "$1")
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
