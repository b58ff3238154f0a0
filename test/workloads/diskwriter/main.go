// Command diskwriter writes to a file at a steady rate with O_DIRECT, so that the bytes reach the disk from its own
// cgroup: a buffered write is written back later by the kernel's flusher threads, which cgroup v1 does not charge
// to the writer. `diskwriter --dir /data --rate 4Mi` rewrites the first --size of /data/diskwriter.dat, one
// 1 MiB block at a time, at 4 MiB/s. The end-to-end suite reads the pod's disk rate from the agent's metrics.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// block is the size of one write; O_DIRECT needs it (and the buffer and the offset) aligned to the device's
// logical block size, which 1 MiB is for every device.
const block = 1 << 20

func main() {
	fs := flag.NewFlagSet("diskwriter", flag.ExitOnError)
	dir := fs.String("dir", "/data", "directory to write the file in (an emptyDir on the node's disk)")
	rate := fs.String("rate", "4Mi", "bytes per second to write")
	size := fs.String("size", "64Mi", "size of the region of the file rewritten over and over")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	perSecond, err := parseBytes("--rate", *rate)
	if err != nil {
		fmt.Fprintf(os.Stderr, "diskwriter: %v\n", err)
		os.Exit(2)
	}
	region, err := parseBytes("--size", *size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "diskwriter: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := write(ctx, filepath.Join(*dir, "diskwriter.dat"), perSecond, max(region/block, 1)); err != nil {
		fmt.Fprintf(os.Stderr, "diskwriter: %v\n", err)
		os.Exit(1)
	}
}

// parseBytes reads a Kubernetes quantity of bytes ("4Mi"), at least one block.
func parseBytes(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	if q.Value() < block {
		return 0, fmt.Errorf("%s %q: must be at least 1Mi", flag, s)
	}
	return q.Value(), nil
}

// write rewrites blocks blocks of path in turn, perSecond bytes a second, until ctx ends.
func write(ctx context.Context, path string, perSecond, blocks int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s for direct I/O: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	// An anonymous mapping is page-aligned, as O_DIRECT wants its buffer.
	buf, err := unix.Mmap(-1, 0, block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("allocating an aligned buffer: %w", err)
	}
	defer func() { _ = unix.Munmap(buf) }()
	for i := range buf {
		buf[i] = byte(i)
	}
	every := time.Duration(float64(time.Second) * block / float64(perSecond))
	fmt.Printf("diskwriter: writing %s at %d bytes/s (a 1 MiB block every %s) over %d MiB\n", path, perSecond, every, blocks)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var written int64
	report := time.Now()
	for n := int64(0); ; n = (n + 1) % blocks {
		if _, err := f.WriteAt(buf, n*block); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		written += block
		if time.Since(report) >= 10*time.Second {
			fmt.Printf("diskwriter: %d MiB written\n", written>>20)
			report = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
