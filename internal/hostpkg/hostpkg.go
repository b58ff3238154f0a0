// Package hostpkg is the one list of Debian packages that Gleaner's commands and tests need on the host
// (packages.tsv), and the step that installs the missing ones. `make host-packages` (hack/host-packages) and the
// local cluster both go through Ensure; test/ci checks that the list names every package whose programs the code
// runs.
package hostpkg

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Needs, the targets a package is needed by (the third column of packages.tsv).
const (
	// Run is `make run` and the local cluster (internal/localcluster), wherever it starts.
	Run = "run"
	// E2E is the end-to-end suite (`make e2e`).
	E2E = "e2e"
	// Unit is `make unit`: tests that run a host program for real.
	Unit = "unit"
	// CgroupV2 is `make test-cgroupv2`: the real-kernel tests on a booted cgroup v2 kernel.
	CgroupV2 = "cgroupv2"
	// NodeV2 is `make e2e-cgroupv2`: the local cluster and e2e tests in a cgroup v2 virtual machine.
	NodeV2 = "nodev2"
	// Peer is `make peer-koordinator`: the colocation benchmark's peer, built from source (hack/peer-koordinator.sh).
	Peer = "peer"
)

//go:embed packages.tsv
var list string

// Package is a Debian package the host needs.
type Package struct {
	// Name is the Debian package.
	Name string
	// File is a file the package installs; it being there shows the package is installed.
	File string
	// NeededBy are the targets that need it (Run, E2E, Unit, ...).
	NeededBy []string
	// Why says what runs it.
	Why string
}

// All returns the declared packages in the list's order.
func All() []Package {
	pkgs, err := Parse(strings.NewReader(list))
	if err != nil {
		panic(fmt.Sprintf("internal/hostpkg/packages.tsv: %v", err)) // the embedded list is the program's own text
	}
	return pkgs
}

// For returns the declared packages that any of the targets needs, in the list's order.
func For(targets ...string) []Package {
	var out []Package
	for _, p := range All() {
		if slices.ContainsFunc(p.NeededBy, func(n string) bool { return slices.Contains(targets, n) }) {
			out = append(out, p)
		}
	}
	return out
}

// Parse reads a package list: one package a line, four tab-separated columns (name, file, needed-by as a
// comma-separated list, why); blank lines and lines starting with # are comments.
func Parse(r io.Reader) ([]Package, error) {
	var pkgs []Package
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			return nil, fmt.Errorf("line %d: want 4 tab-separated columns (package, file, needed-by, why), have %d", n, len(cols))
		}
		p := Package{Name: cols[0], File: cols[1], NeededBy: strings.Split(cols[2], ","), Why: cols[3]}
		switch {
		case p.Name == "" || strings.ContainsAny(p.Name, " /"):
			return nil, fmt.Errorf("line %d: %q is not a Debian package name", n, p.Name)
		case !strings.HasPrefix(p.File, "/"):
			return nil, fmt.Errorf("line %d: package %s: the file %q is not an absolute path", n, p.Name, p.File)
		case seen[p.Name]:
			return nil, fmt.Errorf("line %d: package %s is listed twice", n, p.Name)
		case slices.Contains(p.NeededBy, ""):
			return nil, fmt.Errorf("line %d: package %s: an empty target in %q", n, p.Name, cols[2])
		}
		seen[p.Name] = true
		pkgs = append(pkgs, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the package list: %w", err)
	}
	return pkgs, nil
}

// ErrNotRoot is returned by Ensure when packages are missing and installing them needs root.
var ErrNotRoot = errors.New("installing Debian packages needs root")

// RunFunc runs a command to completion with its output going to out.
type RunFunc func(ctx context.Context, out io.Writer, name string, args ...string) error

// Host is the machine Ensure works on; its fields are replaced in tests.
type Host struct {
	// Exists says whether a file is there.
	Exists func(path string) bool
	// Run runs a command (apt-get).
	Run RunFunc
	// Root says whether this process may install packages.
	Root bool
}

// ThisHost is the machine this process runs on.
func ThisHost() Host {
	return Host{Exists: exists, Run: runCommand, Root: os.Geteuid() == 0}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func runCommand(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// Missing returns the packages whose file is not there.
func (h Host) Missing(pkgs []Package) []Package {
	var out []Package
	for _, p := range pkgs {
		if !h.Exists(p.File) {
			out = append(out, p)
		}
	}
	return out
}

// Ensure installs with apt-get the packages whose file is missing, saying so on out first (it happens once a
// machine). When the install fails (on a fresh machine the package lists may be missing or stale) it updates the
// lists once and tries again. Without root it installs nothing and returns an error wrapping ErrNotRoot that names
// the packages and the command that installs them.
func (h Host) Ensure(ctx context.Context, out io.Writer, pkgs []Package) error {
	missing := h.Missing(pkgs)
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, p := range missing {
		names[i] = p.Name
	}
	if !h.Root {
		return fmt.Errorf("%w: missing %s (as root: apt-get install %s)", ErrNotRoot, strings.Join(names, ", "), strings.Join(names, " "))
	}
	fmt.Fprintf(out, "host-packages: installing Debian packages %s (once on this machine; internal/hostpkg/packages.tsv says who needs them)\n", strings.Join(names, " "))
	install := append([]string{"install", "-y", "--no-install-recommends"}, names...)
	if err := h.Run(ctx, out, "apt-get", install...); err != nil {
		if err := h.Run(ctx, out, "apt-get", "update"); err != nil {
			return fmt.Errorf("updating the package lists to install %s: %w", strings.Join(names, " "), err)
		}
		if err := h.Run(ctx, out, "apt-get", install...); err != nil {
			return fmt.Errorf("installing %s: %w", strings.Join(names, " "), err)
		}
	}
	for _, p := range missing {
		if !h.Exists(p.File) {
			return fmt.Errorf("package %s is installed but %s is missing", p.Name, p.File)
		}
	}
	return nil
}
