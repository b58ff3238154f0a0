// Command images builds the images a Gleaner release ships, gleaner-manager and gleaner-agent, each one image index
// with an image per Linux architecture, and writes them as an OCI image layout; with --push it pushes them to a
// registry as REGISTRY/NAME:VERSION. `make images` and `make push` run it (docs/install.md, "Images and the chart
// into your registry").
//
// The images are reproducible: the same commit, Go toolchain and --ldflags give the same digests (static binaries
// built with -trimpath, one layer with fixed times and modes; internal/images).
//
// Usage:
//
//	go run ./hack/images --version VERSION [--ldflags FLAGS] [--platforms "linux/amd64 linux/arm64"] [--out DIR] [--push REGISTRY]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/gleaner-sh/gleaner/internal/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	version, ldflags, out, push, repo string
	arches                            []string
}

func parseFlags(args []string) (options, error) {
	var o options
	var platforms string
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the images' tag, the version the binaries are stamped with (required)")
	fs.StringVar(&o.ldflags, "ldflags", "", "the linker flags of the binaries (the Makefile's VERSION_LDFLAGS)")
	fs.StringVar(&platforms, "platforms", "linux/amd64 linux/arm64", "the images' platforms, linux/ARCH separated by spaces or commas")
	fs.StringVar(&o.out, "out", "bin/images", "the directory of the OCI image layout (its binaries go into DIR/build)")
	fs.StringVar(&o.push, "push", "", "a registry and path to push the images to as REGISTRY/NAME:VERSION (host[:port][/path])")
	fs.StringVar(&o.repo, "repo", ".", "the repository's root")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.version == "" {
		return o, errors.New("--version is required")
	}
	for _, p := range strings.FieldsFunc(platforms, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		arch, ok := strings.CutPrefix(p, "linux/")
		if !ok || arch == "" {
			return o, fmt.Errorf("platform %q: images are for linux/ARCH", p)
		}
		o.arches = append(o.arches, arch)
	}
	if len(o.arches) == 0 {
		return o, fmt.Errorf("no platforms in %q", platforms)
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	idx, err := images.BuildIndexes(ctx, o.repo, filepath.Join(o.out, "build"), images.ReleasePackages(), o.arches, o.ldflags)
	if err != nil {
		return err
	}
	layout := filepath.Join(o.out, "oci")
	if err := images.WriteLayout(layout, o.version, idx); err != nil {
		return err
	}
	for _, ix := range idx {
		d, err := ix.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s:%s@%s in %s\n", ix.Name, o.version, d, layout)
	}
	if o.push == "" {
		return nil
	}
	pushed, err := images.Push(ctx, o.push, o.version, idx)
	for _, p := range pushed {
		fmt.Printf("pushed %s@%s\n", p.Ref, p.Digest)
	}
	return err
}
