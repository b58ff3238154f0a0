// Command gleaner-local runs Gleaner on a real single-node Kubernetes cluster on this machine (internal/localcluster):
//
//	gleaner-local run       cluster up, Gleaner and the demo deployed, the report printed; Ctrl-C tears it all down
//	gleaner-local up        start the cluster (building what is missing) and import the images; it keeps running
//	gleaner-local deploy    apply config/local (Gleaner) and wait for its pods; with --from-chart, install
//	                        charts/gleaner with helm and config/local/helm-values.yaml instead (the same objects)
//	gleaner-local demo      apply config/demo (the demo workload), size its batch pods to the node, wait until they run
//	gleaner-local report    print what `run` prints: nodes, pods, Gleaner's objects
//	gleaner-local images    rebuild the images and import them into the running cluster
//	gleaner-local build-images  build the images into the state directory without a cluster; print the tarball's path
//	gleaner-local status    what runs, with PIDs and memory
//	gleaner-local down      stop everything and remove what the cluster left on the machine
//	gleaner-local check     say whether the cluster can run here (exit 1 if not, or if one already runs)
//	gleaner-local bench     start and stop it --runs times; print the times and each component's memory
//
// It needs root and writable cgroups, v1 or v2. `make run` is `gleaner-local run`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// e2eStateDir is the end-to-end suite's state directory unless GLEANER_E2E_STATE says otherwise (the Makefile's
// E2E_STATE).
const e2eStateDir = "/var/lib/gleaner-e2e"

// options are the global flags.
type options struct {
	stateDir  string
	repoRoot  string
	watch     time.Duration
	runs      int
	settle    time.Duration
	fromChart bool
}

func main() {
	var o options
	fs := pflag.NewFlagSet("gleaner-local", pflag.ContinueOnError)
	fs.StringVar(&o.stateDir, "state-dir", envOr("GLEANER_LOCAL_STATE", localcluster.DefaultStateDir),
		"state directory: configuration, logs, data ($GLEANER_LOCAL_STATE)")
	fs.StringVar(&o.repoRoot, "repo", "", "Gleaner's source tree (default: found from the working directory)")
	fs.DurationVar(&o.watch, "watch", 0, "with run: print the report again at this interval (0: once)")
	fs.IntVar(&o.runs, "runs", 3, "with bench: how many times to start and stop the cluster")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "with bench: how long the demo runs before memory is read")
	fs.BoolVar(&o.fromChart, "from-chart", false, "with run, deploy, bench: install Gleaner from charts/gleaner with helm "+
		"(config/local/helm-values.yaml; hack/tool.sh builds helm once) instead of applying config/local")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: gleaner-local [flags] run|up|deploy|demo|report|images|build-images|status|down|check|bench")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, fs.Arg(0), o); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-local: %v\n", err)
		if errors.Is(err, localcluster.ErrCannotRun) {
			fmt.Fprintln(os.Stderr, "gleaner-local: `make run-bare` runs gleaner-manager against a control plane without a node instead")
		}
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// check says whether the cluster can run here and none runs yet.
func check(o options) error {
	if err := localcluster.Preflight(); err != nil {
		return err
	}
	// The e2e suite's state directory too: its cluster is as machine-wide as any other.
	if err := localcluster.Running(o.stateDir, localcluster.DefaultStateDir, envOr("GLEANER_E2E_STATE", e2eStateDir)); err != nil {
		return err
	}
	fmt.Println("the local cluster can run on this machine")
	return nil
}

func run(ctx context.Context, command string, o options) error {
	if command == "check" {
		return check(o)
	}
	root := o.repoRoot
	if root == "" {
		var err error
		if root, err = findRepoRoot(); err != nil {
			return err
		}
	}
	c, err := localcluster.New(localcluster.Config{StateDir: o.stateDir, RepoRoot: root})
	if err != nil {
		return err
	}
	d := demo{cluster: c, repoRoot: root, fromChart: o.fromChart}
	switch command {
	case "run":
		return d.run(ctx, o.watch)
	case "up":
		// Idempotent: a cluster that already runs is what `up` asks for; say so and leave it alone.
		if err := c.Up(ctx); errors.Is(err, localcluster.ErrAlreadyRunning) {
			fmt.Printf("gleaner-local: %v\n", err)
		} else if err != nil {
			return err
		}
		d.printAccess()
		return nil
	case "deploy":
		return d.deployGleaner(ctx)
	case "demo":
		if err := d.deployDemo(ctx); err != nil {
			return err
		}
		return d.placeBatchPods(ctx)
	case "report":
		d.report(ctx)
		return nil
	case "images":
		return c.ReloadImages(ctx)
	case "build-images":
		if err := c.BuildImages(ctx); err != nil {
			return err
		}
		fmt.Println(c.ImagesTarball())
		return nil
	case "status":
		return printStatus(c)
	case "down":
		return c.Down(context.WithoutCancel(ctx))
	case "bench":
		return d.bench(ctx, o.runs, o.settle)
	default:
		return fmt.Errorf("unknown command %q (run, up, deploy, demo, report, images, build-images, status, down, check, bench)", command)
	}
}

// findRepoRoot walks up from the working directory to the directory with hack/kube-build.sh.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "kube-build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside Gleaner's source tree (no hack/kube-build.sh above the working directory); pass --repo")
		}
		dir = parent
	}
}

func printStatus(c *localcluster.Cluster) error {
	s, err := c.Status()
	if err != nil {
		return err
	}
	if s.StartedAt.IsZero() {
		fmt.Printf("no local cluster in %s\n", s.StateDir)
		return nil
	}
	state := "running"
	if !s.Running {
		state = "NOT fully running (run `gleaner-local down` to clean up)"
	}
	fmt.Printf("local cluster in %s: %s, started %s\n", s.StateDir, state, s.StartedAt.Format(time.RFC3339))
	fmt.Printf("%-24s %8s %6s %10s\n", "COMPONENT", "PID", "ALIVE", "RSS")
	for _, p := range s.Components {
		fmt.Printf("%-24s %8d %6t %7.0fMiB\n", p.Name, p.PID, p.Alive, float64(p.RSSBytes)/(1<<20))
	}
	return nil
}
