// Command netsend streams bytes to a TCP address as fast as the network takes them, reconnecting when the
// connection breaks, until it is stopped: `netsend --to 198.51.100.2:5001`. The end-to-end suite's network QoS test
// runs one in a batch pod and one in a service pod and counts what arrives.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	fs := flag.NewFlagSet("netsend", flag.ExitOnError)
	to := fs.String("to", "", "host:port to send to")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if *to == "" {
		fmt.Fprintln(os.Stderr, "netsend: --to is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	for ctx.Err() == nil {
		n, err := send(ctx, *to)
		if ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "netsend: sent %d bytes to %s, then: %v; again in 1s\n", n, *to, err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// send streams to addr until the connection fails or ctx ends, and returns how many bytes it wrote.
func send(ctx context.Context, addr string) (int64, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	defer c.Close()
	return io.Copy(c, zeros{})
}

// zeros reads as an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
