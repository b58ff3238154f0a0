// Package docs holds tests that keep the documentation true of the tree.
package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/gleaner-sh/gleaner"

// goTrees are the top-level directories that hold only Go packages: a row naming a directory in one of them names a
// package.
var goTrees = []string{"api", "cmd", "internal", "pkg", "test"}

// TestArchitectureListsEveryPackage: docs/architecture.md's tree table has a row for every Go package of the
// module, and every row describes what is there (see treeProblems).
func TestArchitectureListsEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	problems, err := treeProblems(root, string(doc), pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error("docs/architecture.md: " + p)
	}
}

// TestTreeProblemsCatchStaleRows: on a small tree, each way a row can stop saying what is there is reported, and a
// table that is true is not.
func TestTreeProblemsCatchStaleRows(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"pkg/a/a.go", "pkg/a/testdata/x.txt", "pkg/b/b.go", "config/default/kustomization.yaml",
		"hack/run.sh"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs := []string{"pkg/a", "pkg/b"}
	table := func(rows ...string) string {
		return "# Architecture\n\n## The tree\n\n| path | what | issue |\n| --- | --- | --- |\n" + strings.Join(rows, "\n") +
			"\n\n## Next\n\n| `pkg/elsewhere/` | not in the tree table | - |\n"
	}
	good := []string{"| `pkg/a/` | package a (`a.go`) | one |", "| `pkg/b/` | package b | one |",
		"| `config/default/`, `hack/run.sh` | not Go (`kustomization.yaml`) | one |"}
	tests := []struct {
		name string
		rows []string
		want []string
	}{
		{"true table", good, nil},
		{"a package without a row", good[1:], []string{"no row for package pkg/a"}},
		{"a row for a directory that is gone", append(slices.Clone(good), "| `pkg/{b,gone}/` | b and a package moved away | two |"),
			[]string{"a row names pkg/gone, which does not exist"}},
		{"a row for a directory that is no package", append(slices.Clone(good), "| `pkg/a/testdata/` | the package moved, its fixtures stayed | two |"),
			[]string{"a row names pkg/a/testdata, which is no Go package"}},
		{"a row for a file that is gone", append(slices.Clone(good[1:]), "| `pkg/a/` | package a (`a.go`, `moved.go`) | one |"),
			[]string{"the row of pkg/a names moved.go, which is in none of its directories"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := treeProblems(root, table(tt.rows...), pkgs)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

// treeProblems returns how the "## The tree" table of doc fails to describe the tree at root whose Go packages are
// pkgs (paths relative to root): a package without a row; a row naming a path that does not exist, or a directory
// in a Go tree (goTrees) or inside a package that is not a package itself; a row naming a file (x.go, x.yaml, x.json,
// x.sh) that is neither at that path from root nor in one of the row's directories.
func treeProblems(root, doc string, pkgs []string) ([]string, error) {
	rows, err := tableRows(doc)
	if err != nil {
		return nil, err
	}
	isPkg := map[string]bool{}
	for _, p := range pkgs {
		isPkg[p] = true
	}
	listed := map[string]bool{}
	var problems []string
	for _, r := range rows {
		for _, p := range r.paths {
			listed[p] = true
			fi, err := os.Stat(filepath.Join(root, p))
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("a row names %s, which does not exist", p))
			case fi.IsDir() && !isPkg[p] && (inGoTree(p) || insidePackage(p, isPkg)):
				problems = append(problems, fmt.Sprintf("a row names %s, which is no Go package", p))
			}
		}
		for _, f := range r.files {
			if !exists(filepath.Join(root, f)) && !slices.ContainsFunc(r.paths, func(d string) bool { return exists(filepath.Join(root, d, f)) }) {
				problems = append(problems, fmt.Sprintf("the row of %s names %s, which is in none of its directories", strings.Join(r.paths, ", "), f))
			}
		}
	}
	for _, p := range pkgs {
		if !listed[p] {
			problems = append(problems, "no row for package "+p)
		}
	}
	return problems, nil
}

// treeRow is one row of the tree table: the paths of its first column (braces expanded, trailing slashes cut) and
// the file names its second column cites.
type treeRow struct {
	paths, files []string
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	fileName = regexp.MustCompile(`^[\w./-]+\.(go|ya?ml|json|sh)$`)
)

// tableRows reads the rows of the "## The tree" table of doc.
func tableRows(doc string) ([]treeRow, error) {
	_, table, ok := strings.Cut(doc, "## The tree")
	if !ok {
		return nil, fmt.Errorf(`no "## The tree" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []treeRow
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		var r treeRow
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			for _, p := range expand(m[1]) {
				r.paths = append(r.paths, strings.TrimSuffix(p, "/"))
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
			if fileName.MatchString(m[1]) {
				r.files = append(r.files, m[1])
			}
		}
		if len(r.paths) > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the tree table lists no path")
	}
	return rows, nil
}

// inGoTree reports whether path lies in one of goTrees.
func inGoTree(path string) bool {
	top, _, _ := strings.Cut(path, "/")
	return slices.Contains(goTrees, top)
}

// insidePackage reports whether a parent directory of path is a package.
func insidePackage(path string, isPkg map[string]bool) bool {
	for dir := filepath.Dir(path); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
		if isPkg[dir] {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
