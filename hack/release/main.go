// Command release makes Gleaner's release artifacts into one directory; `make release` runs it:
//
//	kubectl-glean_<VERSION>_<os>_<arch>.tar.gz   the plugin and LICENSE, for each platform (.zip for Windows)
//	gleaner-<chart version>.tgz                  the Helm chart, `helm package` with the version and app version
//	glean.yaml                                   the Krew plugin manifest of the archives
//	checksums.txt                                the SHA-256 of each of the above, for `sha256sum -c`
//
// The archives are reproducible: the same commit, Go toolchain and --source-date-epoch give the same bytes (the
// binaries are built with -trimpath and without cgo; the archives' files have fixed order, modes and times). The
// chart version is VERSION made SemVer (chartVersion).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	r := release{
		Options:      o,
		Build:        goBuild(o.Package, o.LDFlags),
		PackageChart: helmPackage(o.Helm),
	}
	names, err := r.write(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Println(filepath.Join(o.OutDir, n))
	}
	return nil
}

// Options are what a release is made of and where it goes.
type Options struct {
	// Version is the version the binaries are stamped with (LDFlags must set the same) and the archives named
	// after: the Makefile's VERSION.
	Version string
	// Platforms are the plugin's platforms, in the order of the manifest.
	Platforms []platform
	// OutDir receives the artifacts; the artifacts of an earlier release there are removed first.
	OutDir string
	// ReleaseURL is where the archives will be downloadable, for the Krew manifest: <ReleaseURL>/<archive name>.
	ReleaseURL string
	// MTime is the time of every file in the archives.
	MTime time.Time
	// License is the license file each archive carries as LICENSE.
	License string
	// Chart is the Helm chart's directory.
	Chart string
	// ImageRegistry, when set, is the packaged chart's default image.registry: where `make push` put the images.
	ImageRegistry string
	// Package is the plugin's Go package, LDFlags the linker flags it is built with, Helm the helm binary.
	Package, LDFlags, Helm string
}

func parseFlags(args []string) (Options, error) {
	var o Options
	var platforms string
	var epoch int64
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.StringVar(&o.Version, "version", "", "the version the plugin is stamped with and the archives are named after (required)")
	fs.StringVar(&platforms, "platforms", "linux/amd64", "the plugin's platforms, os/arch separated by spaces or commas")
	fs.StringVar(&o.OutDir, "out", "bin/release", "the directory the artifacts are written into")
	fs.StringVar(&o.ReleaseURL, "release-url", "", "where the archives will be downloadable, for the Krew manifest (default the GitHub release of --version)")
	fs.Int64Var(&epoch, "source-date-epoch", 0, "the time of the archives' files, in seconds since 1970 (the commit's time makes them reproducible)")
	fs.StringVar(&o.License, "license", "LICENSE", "the license file each archive carries")
	fs.StringVar(&o.Chart, "chart", "charts/gleaner", "the Helm chart's directory")
	fs.StringVar(&o.ImageRegistry, "image-registry", "", "the packaged chart's default image.registry (default the chart's own)")
	fs.StringVar(&o.Package, "package", "./cmd/kubectl-glean", "the plugin's Go package")
	fs.StringVar(&o.LDFlags, "ldflags", "", "the linker flags the plugin is built with (the Makefile's VERSION_LDFLAGS)")
	fs.StringVar(&o.Helm, "helm", "helm", "the helm binary")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ps, err := parsePlatforms(platforms)
	if err != nil {
		return Options{}, err
	}
	o.Platforms = ps
	if epoch < 0 {
		return Options{}, fmt.Errorf("--source-date-epoch %d is before 1970", epoch)
	}
	o.MTime = time.Unix(epoch, 0).UTC()
	if o.ReleaseURL == "" {
		o.ReleaseURL = homepage + "/releases/download/" + o.Version
	}
	return o, o.validate()
}

func (o Options) validate() error {
	if !fileSafe.MatchString(o.Version) {
		return fmt.Errorf("version %q must be letters, digits, '.', '_', '+' and '-', as it names the archives", o.Version)
	}
	if _, err := chartVersion(o.Version); err != nil {
		return err
	}
	if len(o.Platforms) == 0 {
		return errors.New("no platforms")
	}
	if o.OutDir == "" {
		return errors.New("no output directory")
	}
	return nil
}

// release makes the artifacts of Options; Build and PackageChart run the programs that make the binaries and the
// chart package (tests replace them).
type release struct {
	Options
	// Build builds the plugin for p into the file bin.
	Build func(ctx context.Context, p platform, bin string) error
	// PackageChart writes the package of the chart in the directory chart, with chartVersion and appVersion, into
	// the empty directory dir.
	PackageChart func(ctx context.Context, chart, dir, chartVersion, appVersion string) error
}

// write writes the artifacts into OutDir and returns their names: the archives in the order of Platforms, the chart
// package, the Krew manifest and the checksums.
func (r release) write(ctx context.Context) ([]string, error) {
	chartVer, err := chartVersion(r.Version)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile(r.License)
	if err != nil {
		return nil, fmt.Errorf("reading the license: %w", err)
	}
	chart, err := chartName(r.Chart)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.OutDir, 0o755); err != nil {
		return nil, err
	}
	if err := removeArtifacts(r.OutDir, chart); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "gleaner-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	var names []string
	var archives []archive
	for _, p := range r.Platforms {
		a, err := r.archive(ctx, p, filepath.Join(work, p.OS+"_"+p.Arch), license)
		if err != nil {
			return nil, err
		}
		archives = append(archives, a)
		names = append(names, a.Name)
	}

	pkg, err := r.chartPackage(ctx, filepath.Join(work, "chart"), chartVer)
	if err != nil {
		return nil, err
	}
	names = append(names, pkg)

	manifest, err := marshalPlugin(krewPlugin(chartVer, r.ReleaseURL, archives))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.OutDir, krewManifest), manifest, 0o644); err != nil {
		return nil, err
	}
	names = append(names, krewManifest)

	sums, err := checksums(r.OutDir, names)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.OutDir, checksumsFile), sums, 0o644); err != nil {
		return nil, err
	}
	return append(names, checksumsFile), nil
}

// archive builds the plugin for p in the directory dir and writes its archive, with the license, into OutDir.
func (r release) archive(ctx context.Context, p platform, dir string, license []byte) (archive, error) {
	a := archive{Platform: p, Name: archiveName(r.Version, p), Bin: binaryName(p)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return a, err
	}
	bin := filepath.Join(dir, a.Bin)
	if err := r.Build(ctx, p, bin); err != nil {
		return a, fmt.Errorf("building %s for %s: %w", pluginName, p, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return a, err
	}
	members := []member{{Name: a.Bin, Mode: 0o755, Data: data}, {Name: "LICENSE", Mode: 0o644, Data: license}}
	path := filepath.Join(r.OutDir, a.Name)
	f, err := os.Create(path)
	if err != nil {
		return a, err
	}
	h := sha256.New()
	err = writeArchive(io.MultiWriter(f, h), p, members, r.MTime)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return a, fmt.Errorf("writing %s: %w", a.Name, err)
	}
	a.SHA256 = hex.EncodeToString(h.Sum(nil))
	return a, nil
}

// chartPackage packages the chart in the directory dir and copies the package into OutDir; it returns its name. With
// ImageRegistry the package is of a copy of the chart whose image.registry is that.
func (r release) chartPackage(ctx context.Context, dir, chartVer string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	chart := r.Chart
	if r.ImageRegistry != "" {
		chart = filepath.Join(filepath.Dir(dir), "chart-source")
		if err := copyWithRegistry(r.Chart, chart, r.ImageRegistry); err != nil {
			return "", err
		}
	}
	if err := r.PackageChart(ctx, chart, dir, chartVer, r.Version); err != nil {
		return "", fmt.Errorf("packaging the chart %s as %s: %w", r.Chart, chartVer, err)
	}
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return "", err
	}
	if len(pkgs) != 1 {
		return "", fmt.Errorf("packaging the chart %s wrote %d packages (%q), want 1", r.Chart, len(pkgs), pkgs)
	}
	data, err := os.ReadFile(pkgs[0])
	if err != nil {
		return "", err
	}
	name := filepath.Base(pkgs[0])
	return name, os.WriteFile(filepath.Join(r.OutDir, name), data, 0o644)
}

// chartName is the name in the chart's Chart.yaml, which names its packages.
func chartName(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading the chart: %w", err)
	}
	var c struct {
		Name string `json:"name"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, "Chart.yaml"), err)
	}
	if !fileSafe.MatchString(c.Name) {
		return "", fmt.Errorf("%s: the chart's name %q cannot name a file", filepath.Join(dir, "Chart.yaml"), c.Name)
	}
	return c.Name, nil
}

// removeArtifacts removes from dir what an earlier release wrote there, so that the directory holds one release:
// the plugin's archives, the chart's packages, the Krew manifest and the checksums.
func removeArtifacts(dir, chart string) error {
	for _, pattern := range []string{pluginName + "_*.tar.gz", pluginName + "_*.zip", chart + "-*.tgz", krewManifest, checksumsFile} {
		old, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("removing the earlier release's %s: %w", f, err)
			}
		}
	}
	return nil
}

// goBuild builds the Go package pkg with the linker flags ldflags as the release's binaries are: without cgo (static,
// and cross-compiled without a C toolchain) and with -trimpath (no path of the build machine in them).
func goBuild(pkg, ldflags string) func(ctx context.Context, p platform, bin string) error {
	return func(ctx context.Context, p platform, bin string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, pkg)
		cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "release: go build %s for %s\n", pkg, p)
		return cmd.Run()
	}
}

// helmPackage packages the chart with the helm binary, with its configuration and caches in a directory of its own
// (helm keeps them in $HOME unless told otherwise).
func helmPackage(helm string) func(ctx context.Context, chart, dir, chartVersion, appVersion string) error {
	return func(ctx context.Context, chart, dir, chartVersion, appVersion string) error {
		home, err := os.MkdirTemp("", "gleaner-release-helm-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(home)
		cmd := exec.CommandContext(ctx, helm, "package", chart, "--version", chartVersion, "--app-version", appVersion, "--destination", dir)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		// Its output names the package in dir, which is removed: the release prints where the package went.
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		fmt.Fprintf(os.Stderr, "release: helm package %s as %s\n", chart, chartVersion)
		return cmd.Run()
	}
}
