// Package docs holds tests that keep the documentation true of the tree.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/gleaner-sh/gleaner"

// TestArchitectureListsEveryPackage: docs/architecture.md's tree table has a row for every Go package of the
// module, and every directory a row names exists.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := tablePaths(t, string(doc))
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		dir := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if !listed[dir] {
			t.Errorf("docs/architecture.md has no row for package %s", dir)
		}
	}
	for path := range listed {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist: %v", path, err)
		}
	}
}

// tablePaths returns the paths in the first column of the tree table, braces expanded and trailing slashes cut.
func tablePaths(t *testing.T, doc string) map[string]bool {
	_, table, ok := strings.Cut(doc, "## The tree")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## The tree" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	paths := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			for _, p := range expand(m[1]) {
				paths[strings.TrimSuffix(p, "/")] = true
			}
		}
	}
	if len(paths) == 0 {
		t.Fatal("the tree table lists no path")
	}
	return paths
}

// expand turns "a/{b,c}/d" into "a/b/d" and "a/c/d".
func expand(p string) []string {
	open, close := strings.Index(p, "{"), strings.Index(p, "}")
	if open < 0 || close < open {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[open+1:close], ",") {
		out = append(out, expand(p[:open]+alt+p[close+1:])...)
	}
	return out
}
