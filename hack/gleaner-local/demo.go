package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// Namespaces the demo waits in.
const (
	gleanerNamespace = "gleaner-system"
	demoNamespace    = "gleaner-demo"
)

// demo is `make run`: the local cluster with Gleaner and a workload on it.
type demo struct {
	cluster  *localcluster.Cluster
	repoRoot string
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
	d.waitForBatchResources(ctx, 3*time.Minute)
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

// deployGleaner applies config/local and waits for Gleaner's pods.
func (d demo) deployGleaner(ctx context.Context) error {
	t := time.Now()
	if err := d.cluster.Apply(ctx, filepath.Join(d.repoRoot, "config", "local")); err != nil {
		return err
	}
	if err := d.cluster.WaitWorkloadsReady(ctx, gleanerNamespace, 3*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "local-cluster: Gleaner deployed from config/local and ready in %s\n", time.Since(t).Round(100*time.Millisecond))
	return nil
}

// deployDemo applies config/demo and waits for its service; the batch pods are not waited for (they are Pending
// until Gleaner publishes batch resources, and may stay so when the node has too little to spare).
func (d demo) deployDemo(ctx context.Context) error {
	if err := d.cluster.Apply(ctx, filepath.Join(d.repoRoot, "config", "demo")); err != nil {
		return err
	}
	if _, err := d.cluster.Kubectl(ctx, "-n", demoNamespace, "rollout", "status", "deployment/ls-service", "--timeout=3m"); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "local-cluster: demo workload started from config/demo")
	return nil
}

// waitForBatchResources waits, at most timeout, until the node carries kubernetes.io/batch-cpu: the agent reports
// its first NodeMetric once its samples cover half of metricAggregateDurationSeconds (60 s in config/samples), and
// the manager publishes from that. Waiting longer is no error: the report shows what there is.
func (d demo) waitForBatchResources(ctx context.Context, timeout time.Duration) {
	t := time.Now()
	fmt.Fprintln(os.Stderr, "local-cluster: waiting for the agent's first NodeMetric report and the batch resources it leads to")
	jsonpath := `-o=jsonpath={.status.allocatable.kubernetes\.io/batch-cpu}`
	for time.Since(t) < timeout {
		out, err := d.cluster.Kubectl(ctx, "get", "node", localcluster.NodeName, jsonpath)
		if err == nil && strings.TrimSpace(out) != "" {
			fmt.Fprintf(os.Stderr, "local-cluster: kubernetes.io/batch-cpu %s published after %s\n", strings.TrimSpace(out), time.Since(t).Round(time.Second))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	fmt.Fprintf(os.Stderr, "local-cluster: no batch resources after %s; `kubectl glean explain %s` says why\n", timeout, localcluster.NodeName)
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
		{"get", "nodeallocations,nodeslos,nodemetrics"},
	}
}

// report prints each report command with its output.
func (d demo) report(ctx context.Context) {
	for _, args := range reportCommands() {
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		out, err := d.cluster.Kubectl(ctx, args...)
		if err != nil && out == "" {
			out = err.Error() + "\n"
		}
		fmt.Print(out)
	}
	fmt.Println()
}

// printAccess tells how to reach the cluster from another terminal.
func (d demo) printAccess() {
	l := d.cluster.Layout()
	fmt.Printf("To use the cluster from another terminal (kubectl v1.36 and Gleaner's binaries are in %s):\n", l.BinDir())
	fmt.Printf("  export KUBECONFIG=%s PATH=%s:$PATH\n", d.cluster.Kubeconfig(), l.BinDir())
	fmt.Printf("Logs: %s\n", l.LogDir())
}
