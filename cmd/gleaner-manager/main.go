// Command gleaner-manager runs Gleaner's cluster controllers: the node allocation summary, the SLO configuration
// projected into NodeSLO and NodeMetric objects, and the node-resource framework that publishes batch and mid
// resources on nodes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gleaner-sh/gleaner/pkg/manager"
	"github.com/gleaner-sh/gleaner/pkg/version"
)

func main() {
	opts := manager.NewOptions()
	fs := pflag.NewFlagSet("gleaner-manager", pflag.ExitOnError)
	opts.AddFlags(fs)
	zapOpts := zap.Options{}
	logFlags := flag.NewFlagSet("log", flag.ExitOnError)
	zapOpts.BindFlags(logFlags)
	fs.AddGoFlagSet(logFlags)
	// Not among the options' flags: those are the chart's values (internal/chart), and this one only prints.
	showVersion := fs.Bool("version", false, "print the version and exit")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag.
	if *showVersion {
		fmt.Println("gleaner-manager", version.Get())
		return
	}

	ctx := ctrl.SetupSignalHandler()
	logger := manager.StopLogger(ctx, zap.New(zap.UseFlagOptions(&zapOpts)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	if err := manager.Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-manager: %v\n", err)
		os.Exit(1)
	}
}
