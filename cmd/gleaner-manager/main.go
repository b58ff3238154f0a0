// Command gleaner-manager runs Gleaner's cluster controllers: the node allocation summary, the SLO configuration
// projected into NodeSLO and NodeMetric objects, and the node-resource framework that publishes batch and mid
// resources on nodes.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gleaner-sh/gleaner/internal/logging"
	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/pkg/version"
)

func main() {
	opts := manager.NewOptions()
	fs := pflag.NewFlagSet("gleaner-manager", pflag.ExitOnError)
	opts.AddFlags(fs)
	logOpts := logging.NewOptions()
	logOpts.AddFlags(fs)
	// Not among the options' flags: those are the chart's values (internal/chart), and this one only prints.
	showVersion := fs.Bool("version", false, "print the version and exit")
	// The first step of an uninstall, run by the chart's pre-delete hook and config/uninstall: not a controller.
	giveBack := fs.Bool("give-back-nodes", false, "turn colocation, CPU normalization and amplification off in the SLO ConfigMap, wait until the running manager has taken what it wrote off every Node, and exit (an uninstall's first step)")
	giveBackTimeout := fs.Duration("give-back-timeout", 2*time.Minute, "how long --give-back-nodes waits for the Nodes before it fails, saying what is left")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag.
	if *showVersion {
		fmt.Println("gleaner-manager", version.Get())
		return
	}

	base, err := logOpts.Logger()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-manager: %v\n", err)
		os.Exit(2)
	}
	ctx := ctrl.SetupSignalHandler()
	logger := manager.StopLogger(ctx, base)
	ctrl.SetLogger(logger)
	if err := logOpts.RouteKlog(logger); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-manager: %v\n", err)
		os.Exit(2)
	}

	if *giveBack {
		if err := manager.RunGiveBack(ctx, opts, *giveBackTimeout); err != nil {
			fmt.Fprintf(os.Stderr, "gleaner-manager --give-back-nodes: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := manager.Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-manager: %v\n", err)
		os.Exit(1)
	}
}
