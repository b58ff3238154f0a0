// Command eater holds a target amount of memory, e.g. `eater --size 256Mi`, writing to every page so that it is
// really resident (and charged to the pod's memory cgroup), optionally growing by --step every --interval. It then
// holds it until SIGTERM or SIGINT, or for --hold and then exits (an init container that keeps a pod's main container
// waiting).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// pageSize is the stride of the writes that make the memory resident.
const pageSize = 4096

func main() {
	fs := flag.NewFlagSet("eater", flag.ExitOnError)
	size := fs.String("size", "128Mi", "memory to hold, as Kubernetes writes memory: 64Mi, 1Gi")
	step := fs.String("step", "", "grow by this much every --interval; empty takes it all at once")
	interval := fs.Duration("interval", time.Second, "time between steps")
	hold := fs.Duration("hold", 0, "exit after holding the memory this long; 0 holds it until SIGTERM or SIGINT")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	chunks, err := plan(*size, *step)
	if err != nil {
		fmt.Fprintf(os.Stderr, "eater: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var held [][]byte
	var total int64
	for i, n := range chunks {
		if i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(*interval):
			}
		}
		held = append(held, touch(make([]byte, n)))
		total += n
		fmt.Printf("eater: holding %s\n", resource.NewQuantity(total, resource.BinarySI))
	}
	if *hold > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(*hold):
		}
	} else {
		<-ctx.Done()
	}
	fmt.Printf("eater: releasing %d chunks\n", len(held))
}

// plan splits size into chunks of step bytes (the last one smaller); an empty step means one chunk.
func plan(size, step string) ([]int64, error) {
	total, err := parseBytes("--size", size)
	if err != nil {
		return nil, err
	}
	if step == "" {
		return []int64{total}, nil
	}
	s, err := parseBytes("--step", step)
	if err != nil {
		return nil, err
	}
	var chunks []int64
	for left := total; left > 0; left -= s {
		chunks = append(chunks, min(s, left))
	}
	return chunks, nil
}

func parseBytes(flagName, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", flagName, s, err)
	}
	if q.Value() <= 0 {
		return 0, fmt.Errorf("%s %q: must be more than 0", flagName, s)
	}
	return q.Value(), nil
}

// touch writes one byte in every page of b so that the kernel backs all of it.
func touch(b []byte) []byte {
	for i := 0; i < len(b); i += pageSize {
		b[i] = 1
	}
	return b
}
