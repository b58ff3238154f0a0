package ci

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/internal/hostpkg"
)

// The base machine: what a fresh machine of the project's kind has before anything is installed. Debian's required
// and important packages are on every Debian installation; these optional ones are the project's declared base
// (docs/development.md: "a fresh Debian machine with Go, gcc, make and git", kubectl as shipped).
var baseDebianPackages = []string{"git", "make", "gcc", "kubectl"}

// builtByProject are the programs hack/kube-build.sh and hack/tool.sh build into the project's cache: the code runs
// them by their cache path, never from the host, so a copy on the host's PATH is not theirs.
var builtByProject = []string{"kube-apiserver", "kubectl", "kubelet", "kube-scheduler", "kube-controller-manager",
	"etcd", "containerd", "containerd-shim-runc-v2", "ctr", "golangci-lint", "helm", "prometheus", "promtool"}

// notPrograms are words the scan finds in a program's place that name something else; each says what it is.
var notPrograms = map[string]string{
	"node":   "a Kubernetes resource or label word, not Node.js",
	"write":  "a file operation's name in a test, not write(1)",
	"gold":   "a word in a test's data, not the gold linker",
	"patch":  "a kubectl verb (testenv's Kubectl), not patch(1)",
	"docker": "a runtime a test names as an invalid --runtime-hook mode; the project never runs the docker CLI",
	"file":   "the key of QEMU's -drive option (hack/cgroupv2-node.sh), not file(1)",
}

// programDirs are where a bare program name is looked up: root's default PATH, not the caller's, so that a
// developer's own directories do not hide a program the host lacks.
var programDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// TestEveryHostProgramIsDeclared finds the host programs the project runs, in its Go code and in its scripts and
// Makefile, and fails when one comes from a Debian package that internal/hostpkg/packages.tsv does not list and the
// base machine does not have. It finds a program only where it is installed: after `make host-packages` every listed
// one is, and a program the list lacks but a developer installed by hand is exactly what it is for.
func TestEveryHostProgramIsDeclared(t *testing.T) {
	host := debianHost(t)
	uses := scanRepo(t, repoRoot(t))
	if len(uses) == 0 {
		t.Fatal("the scan found no program names at all: it is broken")
	}
	for _, p := range undeclared(uses, hostpkg.All(), host) {
		t.Error(p)
	}

	// The check can fail: with iptables taken off the list, iptables-save (internal/localcluster/firewall.go) is
	// reported. iptables is installed by `make host-packages` before the unit tests run.
	t.Run("iptables off the list", func(t *testing.T) {
		var without []hostpkg.Package
		for _, p := range hostpkg.All() {
			if p.Name != "iptables" {
				without = append(without, p)
			}
		}
		if _, ok := host.resolve("iptables-save"); !ok {
			Skipf(t, "iptables-save is not installed (`make host-packages` installs it)")
		}
		problems := undeclared(uses, without, host)
		if !slices.ContainsFunc(problems, func(p string) bool {
			return strings.Contains(p, `"iptables-save"`) && strings.Contains(p, "package iptables")
		}) {
			t.Errorf("without iptables on the list, the check reported %q; want iptables-save in package iptables", problems)
		}
	})
}

// use is where a program name was found.
type use struct {
	name  string
	where string // file:line
}

// undeclared returns a line per program that is installed from a Debian package neither listed nor part of the base
// machine, or installed outside Debian without being the project's own or the base machine's.
func undeclared(uses []use, listed []hostpkg.Package, host debian) []string {
	byName := map[string][]string{}
	for _, u := range uses {
		byName[u.name] = append(byName[u.name], u.where)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		if _, ok := notPrograms[name]; ok || slices.Contains(builtByProject, filepath.Base(name)) {
			continue
		}
		path, ok := host.resolve(name)
		if !ok {
			continue // not installed here: nothing to learn about it on this machine
		}
		where := byName[name]
		if len(where) > 3 {
			where = append(where[:3:3], fmt.Sprintf("and %d more", len(where)-3))
		}
		pkg := host.owner(path)
		switch {
		case pkg == "":
			problems = append(problems, fmt.Sprintf("%q (%s) runs %s, which no Debian package installed: install it from the project (internal/hostpkg or hack/tool.sh), or add it to notPrograms if the word is not a program; used at %s",
				name, path, path, strings.Join(where, ", ")))
		case slices.ContainsFunc(listed, func(p hostpkg.Package) bool { return p.Name == pkg }):
		case slices.Contains(baseDebianPackages, pkg) || host.priority(pkg) == "required" || host.priority(pkg) == "important":
		default:
			problems = append(problems, fmt.Sprintf("%q (%s) is in Debian package %s (priority %s), which internal/hostpkg/packages.tsv does not list and a fresh machine does not have; used at %s",
				name, path, pkg, host.priority(pkg), strings.Join(where, ", ")))
		}
	}
	return problems
}

// debian answers where a program is and which package installed it, from dpkg's database: the file lists under
// /var/lib/dpkg/info and one dpkg-query for the priorities.
type debian struct {
	owners     map[string]string // file -> package
	priorities map[string]string // package -> priority
}

func debianHost(t *testing.T) debian {
	t.Helper()
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		Skipf(t, "telling which Debian package installed a program needs dpkg-query: %v", err)
	}
	d := debian{owners: map[string]string{}, priorities: map[string]string{}}
	lists, err := filepath.Glob("/var/lib/dpkg/info/*.list")
	if err != nil || len(lists) == 0 {
		t.Fatalf("no dpkg file lists under /var/lib/dpkg/info (%v)", err)
	}
	for _, l := range lists {
		pkg := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(l), ".list"), ":amd64")
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Split(string(b), "\n") {
			if f != "" {
				d.owners[f] = pkg
			}
		}
	}
	out, err := exec.Command("dpkg-query", "-W", "-f=${Package}\t${Priority}\n").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if pkg, prio, ok := strings.Cut(line, "\t"); ok {
			d.priorities[pkg] = prio
		}
	}
	return d
}

// resolve finds a program: an absolute path as it is, a bare name in programDirs.
func (d debian) resolve(name string) (string, bool) {
	if filepath.IsAbs(name) {
		if !slices.Contains(programDirs, filepath.Dir(name)) {
			return "", false // a file the code reads, or a program in a directory of the project's own
		}
		st, err := os.Stat(name)
		return name, err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
	}
	for _, dir := range programDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// owner is the Debian package that installed path, or "" when none did. It looks at the file the path links to
// too (update-alternatives' links are no package's), and under both names of a merged /usr (/bin is /usr/bin).
func (d debian) owner(path string) string {
	candidates := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		candidates = append(candidates, real)
	}
	for _, c := range slices.Clone(candidates) {
		if rest, ok := strings.CutPrefix(c, "/usr"); ok {
			candidates = append(candidates, rest)
		} else {
			candidates = append(candidates, "/usr"+c)
		}
	}
	for _, c := range candidates {
		if pkg, ok := d.owners[c]; ok {
			return pkg
		}
	}
	return ""
}

// priority is a package's Debian priority (required, important, standard, optional).
func (d debian) priority(pkg string) string { return d.priorities[pkg] }

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// scanRepo finds program names in the Go packages that run programs and in the shell the project runs (hack/,
// the Makefile, .ci/run).
func scanRepo(t *testing.T, root string) []use {
	t.Helper()
	var uses []use
	goDirs := map[string][]string{} // directory -> its Go files
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			goDirs[filepath.Dir(path)] = append(goDirs[filepath.Dir(path)], path)
		case strings.HasSuffix(path, ".sh") || rel == "Makefile" || rel == filepath.Join(".ci", "run"):
			found, err := scanShell(path, rel)
			if err != nil {
				return err
			}
			uses = append(uses, found...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, files := range goDirs {
		found, err := scanGoPackage(root, files)
		if err != nil {
			t.Fatal(err)
		}
		uses = append(uses, found...)
	}
	return uses
}

// programWord is what a program's name looks like: a bare name, or an absolute path to one.
var programWord = regexp.MustCompile(`^(/[A-Za-z0-9._+-]+)*/?[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// scanGoPackage returns the strings in a program's place in a directory's Go files, when one of them imports
// os/exec: the first string argument of a call (exec.Command's name, a wrapper's), every value of a keyed
// composite literal (a struct field naming a command), the first element of a string list (an argv), and constant
// and variable values (a program's path).
func scanGoPackage(root string, files []string) ([]use, error) {
	fset := token.NewFileSet()
	parsed := make([]*ast.File, 0, len(files))
	runsPrograms := false
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f, err)
		}
		parsed = append(parsed, af)
		for _, imp := range af.Imports {
			if imp.Path.Value == `"os/exec"` {
				runsPrograms = true
			}
		}
	}
	if !runsPrograms {
		return nil, nil
	}
	var uses []use
	add := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !programWord.MatchString(s) {
			return
		}
		pos := fset.Position(lit.Pos())
		rel, _ := filepath.Rel(root, pos.Filename)
		uses = append(uses, use{name: s, where: fmt.Sprintf("%s:%d", rel, pos.Line)})
	}
	for _, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						add(lit)
						break
					}
				}
			case *ast.KeyValueExpr:
				add(n.Value)
			case *ast.CompositeLit:
				if len(n.Elts) > 0 {
					add(n.Elts[0])
				}
			case *ast.ValueSpec:
				for _, v := range n.Values {
					add(v)
				}
			}
			return true
		})
	}
	return uses, nil
}

// shellWord matches the words of shell text that could name a program.
var shellWord = regexp.MustCompile(`(/[A-Za-z0-9._+-]+)+|[A-Za-z0-9][A-Za-z0-9._+-]*`)

// message matches a line that prints text to a person, whose quoted words are not run; quoted matches the quotes.
var (
	message = regexp.MustCompile(`^\s*(@)?(echo|printf|log)\b`)
	quoted  = regexp.MustCompile(`"[^"]*"|'[^']*'`)
)

// scanShell returns every word of a shell script or Makefile outside comments and messages: the scan is coarse, and
// a word that is not installed on the host or is in the base machine costs nothing.
func scanShell(path, rel string) ([]use, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var uses []use
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || strings.ContainsRune(" \t@", rune(line[i-1]))) {
			line = line[:i] // a comment, or a Makefile recipe's @# comment
		}
		if message.MatchString(line) {
			line = quoted.ReplaceAllString(line, "")
		}
		line = quoted.ReplaceAllStringFunc(line, func(q string) string {
			if strings.Contains(q, " ") && !strings.Contains(q, "$(") && !strings.Contains(q, "`") {
				return "" // a message in words: nothing in it runs
			}
			return q
		})
		for _, w := range shellWord.FindAllString(line, -1) {
			uses = append(uses, use{name: w, where: fmt.Sprintf("%s:%d", rel, n)})
		}
	}
	return uses, sc.Err()
}

// TestScanFindsProgramPlaces: the Go scan finds a program in each place the project names one, and only there.
func TestScanFindsProgramPlaces(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "os/exec"

const runc = "/usr/sbin/runc"

type family struct{ save string }

func f() {
	exec.Command("losetup", "--find", "not-a-program")
	_ = family{save: "iptables-save"}
	_ = [][]string{{"nft", "list", "ruleset"}}
	run(nil, "apt-get", "install", "second")
	_ = "a sentence, not a program"
}
`
	file := filepath.Join(dir, "p.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	uses, err := scanGoPackage(dir, []string{file})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range uses {
		names = append(names, u.name)
	}
	sort.Strings(names)
	want := []string{"/usr/sbin/runc", "apt-get", "iptables-save", "losetup", "nft"}
	if !slices.Equal(names, want) {
		t.Errorf("found %v, want %v", names, want)
	}
}
