// Command gleaner-agent runs on every node (a DaemonSet): it follows the node's pods and NodeSLO, measures the
// node, its pods and its host applications from /proc and the cgroup tree, and reports the usage in the node's
// NodeMetric status for gleaner-manager.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/gleaner-sh/gleaner/internal/logging"
	"github.com/gleaner-sh/gleaner/pkg/agent"
	"github.com/gleaner-sh/gleaner/pkg/version"
)

func main() {
	opts := agent.NewOptions()
	opts.NodeName = os.Getenv("NODE_NAME")                // the downward API; --node-name overrides it
	opts.Uninstall.Namespace = os.Getenv("POD_NAMESPACE") // the downward API; --namespace overrides it
	fs := pflag.NewFlagSet("gleaner-agent", pflag.ExitOnError)
	opts.AddFlags(fs)
	logOpts := logging.NewOptions()
	logOpts.AddFlags(fs)
	// Not among the options' flags: those are the chart's values (internal/chart), and this one only prints.
	showVersion := fs.Bool("version", false, "print the version and exit")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag.
	if *showVersion {
		fmt.Println("gleaner-agent", version.Get())
		return
	}

	logger, err := logOpts.Logger()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-agent: %v\n", err)
		os.Exit(2)
	}
	// Only the logging and signal packages of controller-runtime: its root package would link the whole manager
	// (webhooks, leader election) into the agent, which is measurably larger in memory.
	crlog.SetLogger(logger)
	if err := logOpts.RouteKlog(logger); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-agent: %v\n", err)
		os.Exit(2)
	}

	ctx := klog.NewContext(signals.SetupSignalHandler(), logger.WithName("gleaner-agent"))
	if err := agent.Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-agent: %v\n", err)
		os.Exit(1)
	}
}
