package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gleanerdemo "github.com/gleaner-sh/gleaner/internal/demo"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// gleanerNamespace is where config/local deploys Gleaner.
const gleanerNamespace = "gleaner-system"

// demo is `make run`: the local cluster with Gleaner and a workload on it.
type demo struct {
	cluster  *localcluster.Cluster
	repoRoot string
	// fromChart installs Gleaner from charts/gleaner with helm instead of applying config/local.
	fromChart bool
}

// run brings everything up, prints the report (again every watch, if set), waits for Ctrl-C and tears down.
func (d demo) run(ctx context.Context, watch time.Duration) (err error) {
	if err := d.cluster.Up(ctx); err != nil {
		return err
	}
	defer func() {
		fmt.Println()
		if derr := d.cluster.Down(context.WithoutCancel(ctx)); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	if err := d.deployGleaner(ctx); err != nil {
		return err
	}
	if err := d.deployDemo(ctx); err != nil {
		return err
	}
	if err := d.placeBatchPods(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(os.Stderr, "local-cluster: %v\n", err)
	}
	d.report(ctx)
	d.printAccess()
	fmt.Println("Ctrl-C stops the cluster and removes everything it created.")
	var tick <-chan time.Time
	if watch > 0 {
		t := time.NewTicker(watch)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			d.report(ctx)
		}
	}
}

// deployGleaner applies config/local, or installs charts/gleaner with config/local/helm-values.yaml (fromChart),
// and waits for Gleaner's pods.
func (d demo) deployGleaner(ctx context.Context) error {
	from := "config/local"
	if d.fromChart {
		helm, err := localcluster.Helm(ctx, d.repoRoot)
		if err != nil {
			return err
		}
		from = "charts/gleaner (helm, config/local/helm-values.yaml)"
		t := time.Now()
		if err := d.cluster.InstallChart(ctx, helm, filepath.Join(d.repoRoot, "charts", "gleaner"),
			filepath.Join(d.repoRoot, "config", "local", "helm-values.yaml"), "gleaner", gleanerNamespace); err != nil {
			return err
		}
		return d.waitGleaner(ctx, from, t)
	}
	t := time.Now()
	if err := d.cluster.Apply(ctx, filepath.Join(d.repoRoot, "config", "local")); err != nil {
		return err
	}
	return d.waitGleaner(ctx, from, t)
}

// waitGleaner waits for Gleaner's pods deployed from `from` since t.
func (d demo) waitGleaner(ctx context.Context, from string, t time.Time) error {
	if err := d.cluster.WaitWorkloadsReady(ctx, gleanerNamespace, 3*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "local-cluster: Gleaner deployed from %s and ready in %s\n", from, time.Since(t).Round(100*time.Millisecond))
	return nil
}

// deployDemo applies config/demo and waits for its service; placeBatchPods then sizes the batch pods and waits for
// them.
func (d demo) deployDemo(ctx context.Context) error {
	if err := d.cluster.Apply(ctx, filepath.Join(d.repoRoot, "config", "demo")); err != nil {
		return err
	}
	if _, err := d.cluster.Kubectl(ctx, "-n", gleanerdemo.Namespace, "rollout", "status", "deployment/ls-service", "--timeout=3m"); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "local-cluster: demo workload started from config/demo")
	return nil
}

// placeBatchPods sizes the demo's batch pods to what the node offers once gleaner-agent has measured the service,
// and waits until they run (internal/demo). When they cannot, it says why and what would change it; the report
// that follows shows the node's explanation and the scheduler's message on each pending pod.
func (d demo) placeBatchPods(ctx context.Context) error {
	c, err := gleanerdemo.NewClient(d.cluster.Kubeconfig())
	if err != nil {
		return err
	}
	t := time.Now()
	p := gleanerdemo.Placer{Client: c, Node: localcluster.NodeName, Out: os.Stderr,
		PublishTimeout: 5 * time.Minute, RunTimeout: 2 * time.Minute, Prober: prober(c)}
	if _, err := p.Place(ctx); err != nil {
		return err
	}
	running := time.Now()
	fmt.Fprintf(os.Stderr, "local-cluster: the demo's batch pods run, %s after the service was ready; waiting for the service's latency and the node's NodeMetric to cover them\n",
		running.Sub(t).Round(time.Second))
	if err := prober(c).WaitBeside(ctx, localcluster.NodeName, running, 2*time.Minute); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "local-cluster: the report below may not cover the batch pods yet: %v\n", err)
	}
	return nil
}

// reportCommands are the kubectl commands whose output `make run` prints, in order: what a user wants to see.
// Showing one more thing is one more line here; kubectl plugins built from cmd/ (kubectl-glean) are on the PATH.
func reportCommands() [][]string {
	return [][]string{
		{"get", "nodes", "-o", "wide"},
		{"get", "nodes", "-o", "custom-columns=NODE:.metadata.name,CPU:.status.allocatable.cpu," +
			"MEMORY:.status.allocatable.memory,BATCH-CPU:.status.allocatable.kubernetes\\.io/batch-cpu," +
			"BATCH-MEMORY:.status.allocatable.kubernetes\\.io/batch-memory"},
		{"get", "pods", "--all-namespaces", "-o", "wide"},
		// What Gleaner allocated and published, and how it derived the batch and mid resources.
		{"glean", "nodes"},
		{"glean", "explain", localcluster.NodeName},
		// Why batch pods wait, if any do: the scheduler's message on each pending pod.
		{"get", "pods", "--all-namespaces", "--field-selector=status.phase=Pending", "-o",
			"custom-columns=POD:.metadata.name,WHY:.status.conditions[?(@.type=='PodScheduled')].message"},
		{"get", "nodeallocations,nodeslos,nodemetrics,noderesourceexplanations"},
	}
}

// report prints each report command with its output, then what the demo shows: the service's latency with the
// batch pods beside it against alone, and the node's CPU use (internal/demo.Prober.Outcome).
func (d demo) report(ctx context.Context) {
	for _, args := range reportCommands() {
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		out, err := d.cluster.Kubectl(ctx, args...)
		if err != nil && out == "" {
			out = err.Error() + "\n"
		}
		fmt.Print(out)
	}
	fmt.Println("\nThe demo service beside the batch pods:")
	c, err := gleanerdemo.NewClient(d.cluster.Kubeconfig())
	if err != nil {
		fmt.Printf("not read: %v\n\n", err)
		return
	}
	fmt.Println(prober(c).Outcome(ctx, localcluster.NodeName))
}

// prober reads the demo service's latency from this machine, which is the demo's node.
func prober(c client.Client) *gleanerdemo.Prober {
	return &gleanerdemo.Prober{Client: c, HTTP: &http.Client{Timeout: 2 * time.Second}}
}

// printAccess tells how to reach the cluster from another terminal.
func (d demo) printAccess() {
	l := d.cluster.Layout()
	fmt.Printf("To use the cluster from another terminal (kubectl v1.36 and Gleaner's binaries are in %s):\n", l.BinDir())
	fmt.Printf("  export KUBECONFIG=%s PATH=%s:$PATH\n", d.cluster.Kubeconfig(), l.BinDir())
	fmt.Printf("Logs: %s\n", l.LogDir())
}
