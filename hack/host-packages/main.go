// Command host-packages installs the Debian packages that the named targets need (internal/hostpkg/packages.tsv)
// and are missing. The Makefile runs it before every target that runs host programs:
//
//	go run ./hack/host-packages run e2e unit
//
// Without root it installs nothing: outside CI it says what is missing and succeeds (the tests that need a missing
// program skip and say why); under CI=true it fails, as those tests would.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/gleaner-sh/gleaner/internal/hostpkg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "host-packages: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, targets []string) error {
	known := []string{hostpkg.Run, hostpkg.E2E, hostpkg.Unit, hostpkg.CgroupV2, hostpkg.NodeV2, hostpkg.Peer}
	if len(targets) == 0 {
		return fmt.Errorf("usage: host-packages TARGET... (targets: %s)", strings.Join(known, " "))
	}
	for _, t := range targets {
		if !slices.Contains(known, t) {
			return fmt.Errorf("unknown target %q (targets: %s)", t, strings.Join(known, " "))
		}
	}
	err := hostpkg.ThisHost().Ensure(ctx, os.Stderr, hostpkg.For(targets...))
	if errors.Is(err, hostpkg.ErrNotRoot) && os.Getenv("CI") != "true" {
		fmt.Fprintf(os.Stderr, "host-packages: %v; the tests that need them skip and say why\n", err)
		return nil
	}
	return err
}
