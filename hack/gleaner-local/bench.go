package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// bench measures the local cluster for docs/benchmarks.md: runs times (up to node Ready, Gleaner deployed and
// ready, down) and then each component's resident memory with Gleaner and the demo running, after settle.
func (d demo) bench(ctx context.Context, runs int, settle time.Duration) error {
	type sample struct{ up, deploy, down time.Duration }
	var samples []sample
	for i := range runs {
		t := time.Now()
		if err := d.cluster.Up(ctx); err != nil {
			return err
		}
		up := time.Since(t)
		t = time.Now()
		if err := d.deployGleaner(ctx); err != nil {
			return err
		}
		deploy := time.Since(t)
		if i == runs-1 {
			if err := d.memory(ctx, settle); err != nil {
				return err
			}
		}
		t = time.Now()
		if err := d.cluster.Down(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		samples = append(samples, sample{up: up, deploy: deploy, down: time.Since(t)})
	}
	fmt.Println("| run | up (node Ready) | Gleaner deployed and ready | down |")
	fmt.Println("| --- | --- | --- | --- |")
	for i, s := range samples {
		fmt.Printf("| %d | %.1f s | %.1f s | %.1f s |\n", i+1, s.up.Seconds(), s.deploy.Seconds(), s.down.Seconds())
	}
	return nil
}

// memory starts the demo, waits settle, and prints the resident memory of each component and pod process.
func (d demo) memory(ctx context.Context, settle time.Duration) error {
	if err := d.deployDemo(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	s, err := d.cluster.Status()
	if err != nil {
		return err
	}
	fmt.Printf("\nResident memory after %s with Gleaner and the demo running:\n\n", settle)
	fmt.Println("| process | RSS |")
	fmt.Println("| --- | --- |")
	for _, c := range s.Components {
		fmt.Printf("| %s | %d MiB |\n", c.Name, c.RSSBytes>>20)
	}
	pods, err := podProcesses()
	if err != nil {
		return err
	}
	for _, p := range pods {
		fmt.Printf("| %s (pod) | %d MiB |\n", p.name, p.rss>>20)
	}
	fmt.Println()
	return nil
}

type podProcess struct {
	name string
	rss  uint64
}

// podProcesses are the processes in the kubepods cgroups, by command name, largest first.
func podProcesses() ([]podProcess, error) {
	pids, err := localcluster.ContainerPIDs()
	if err != nil {
		return nil, err
	}
	var out []podProcess
	for _, pid := range pids {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		out = append(out, podProcess{name: string(comm[:len(comm)-1]), rss: localcluster.ProcessRSS(pid)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rss > out[j].rss })
	return out, nil
}
