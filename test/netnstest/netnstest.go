// Package netnstest builds networks of namespaces for tests that need real traffic (network QoS): namespaces of the
// test's own, veths between them, a TCP receiver that counts bytes per port, a sender, and a table that takes
// packets' priority away. Nothing changes in the test process's own namespace unless a test puts a device or a
// table there itself.
package netnstest

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/gleaner-sh/gleaner/test/ci"
)

// Do runs fn on a thread of its own inside ns (netns.None(): the test process's namespace). A socket fn creates
// stays in ns whichever thread uses it later. The thread is never handed back to other goroutines.
func Do(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no unlock: the thread dies with the goroutine, and its namespace with it
		if ns.IsOpen() {
			if err := netns.Set(ns); err != nil {
				errc <- fmt.Errorf("entering a network namespace: %w", err)
				return
			}
		}
		errc <- fn()
	}()
	return <-errc
}

// New returns a new network namespace, closed when the test ends (the kernel removes it with its last reference).
// Without the privilege to make one, it skips t, or fails it under CI=true.
func New(t testing.TB) netns.NsHandle {
	t.Helper()
	var ns netns.NsHandle
	err := Do(netns.None(), func() error {
		var err error
		ns, err = netns.New()
		return err
	})
	if err != nil {
		ci.Skipf(t, "this test needs to create network namespaces (root): %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

// Handle returns a netlink handle for ns, closed when the test ends.
func Handle(t testing.TB, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("opening netlink in a namespace: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

// Up gives dev the address cidr ("" for none) and sets it up, through h.
func Up(t testing.TB, h *netlink.Handle, dev, cidr string) {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatalf("finding %s: %v", dev, err)
	}
	if cidr != "" {
		addr, err := netlink.ParseAddr(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddrAdd(link, addr); err != nil {
			t.Fatalf("adding %s to %s: %v", cidr, dev, err)
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatalf("setting %s up: %v", dev, err)
	}
}

// Veth adds a veth pair through h: dev in h's namespace, peer in other's.
func Veth(t testing.TB, h *netlink.Handle, dev, peer string, other netns.NsHandle) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev}, PeerName: peer, PeerNamespace: netlink.NsFd(other)}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth %s: %v", dev, err)
	}
}

// Route adds a route to dst ("0.0.0.0/0" for the default) via gw on dev, through h.
func Route(t testing.TB, h *netlink.Handle, dev, dst, gw string) {
	t.Helper()
	link, err := h.LinkByName(dev)
	if err != nil {
		t.Fatalf("finding %s: %v", dev, err)
	}
	_, d, err := net.ParseCIDR(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: d, Gw: net.ParseIP(gw)}); err != nil {
		t.Fatalf("adding the route to %s via %s: %v", dst, gw, err)
	}
}

// Receiver counts the bytes received on each of its ports, and the source addresses that connected.
type Receiver struct {
	mu      sync.Mutex
	bytes   map[int]int64
	sources map[string]bool
	open    int // connections not yet read to their end
}

// Listen starts a Receiver on addr's ports inside ns, stopped when the test ends.
func Listen(t testing.TB, ns netns.NsHandle, addr string, ports ...int) *Receiver {
	t.Helper()
	r := &Receiver{bytes: map[int]int64{}, sources: map[string]bool{}}
	for _, port := range ports {
		var ln net.Listener
		err := Do(ns, func() error {
			var err error
			ln, err = net.Listen("tcp4", fmt.Sprintf("%s:%d", addr, port))
			return err
		})
		if err != nil {
			t.Fatalf("listening on %s:%d in its namespace: %v", addr, port, err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go r.serve(ln, port)
	}
	return r
}

func (r *Receiver) serve(ln net.Listener, port int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.sources[c.RemoteAddr().(*net.TCPAddr).IP.String()] = true
		r.open++
		r.mu.Unlock()
		go func() {
			defer func() {
				_ = c.Close()
				r.mu.Lock()
				r.open--
				r.mu.Unlock()
			}()
			buf := make([]byte, 256<<10)
			for {
				k, err := c.Read(buf)
				r.mu.Lock()
				r.bytes[port] += int64(k)
				r.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
}

// Reset zeroes the byte counts.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.bytes)
}

// Drain waits until every connection so far has been read to its end, for at most timeout, and returns how many
// bytes arrived while it waited. A sender that closed its connection may leave many megabytes in its socket's and
// the receiver's buffers (the receive buffer grows to net.ipv4.tcp_rmem's maximum, 32 MiB on some kernels) when
// the reading goroutine falls behind on a busy machine; a measurement that starts before they are read counts the
// last one's bytes as its own.
func (r *Receiver) Drain(timeout time.Duration) (int64, error) {
	start := r.total()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		open := r.open
		r.mu.Unlock()
		if open == 0 {
			return r.total() - start, nil
		}
		if time.Now().After(deadline) {
			return r.total() - start, fmt.Errorf("%d connections still open after %v", open, timeout)
		}
	}
}

func (r *Receiver) total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum int64
	for _, b := range r.bytes {
		sum += b
	}
	return sum
}

// Bytes is how many bytes arrived on port since the last Reset.
func (r *Receiver) Bytes(port int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes[port]
}

// Sources are the addresses connections came from.
func (r *Receiver) Sources() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.sources)
}

// Rates counts for d and returns each port's received rate in bits per second.
func (r *Receiver) Rates(d time.Duration, ports ...int) []float64 {
	r.Reset()
	time.Sleep(d)
	out := make([]float64, len(ports))
	for i, p := range ports {
		out[i] = float64(r.Bytes(p)*8) / d.Seconds()
	}
	return out
}

// Send streams zeros to addr ("host:port") from inside ns for d, as fast as the network takes them.
func Send(ns netns.NsHandle, addr string, d time.Duration) error {
	var c net.Conn
	err := Do(ns, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, 5*time.Second)
		return err
	})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	_ = c.SetWriteDeadline(time.Now().Add(d))
	for {
		if _, err := c.Write(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil
			}
			return err
		}
	}
}

// Reprioritize adds the nftables table inet `table` to ns (netns.None(): the test process's namespace), whose
// postrouting chain runs after mangle's and sets the priority of every packet leaving through dev ("" for any
// device) back to 0 (`oifname dev meta priority set 0`), as another agent's rule or a datapath that handles
// packets itself might; the table is removed when the test ends.
func Reprioritize(t testing.TB, ns netns.NsHandle, table, dev string) {
	t.Helper()
	var opts []nftables.ConnOption
	if ns.IsOpen() {
		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	tb := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: table})
	ch := conn.AddChain(&nftables.Chain{Name: "postrouting", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityRef(*nftables.ChainPriorityMangle + 10)})
	var exprs []expr.Any
	if dev != "" {
		ifname := make([]byte, unix.IFNAMSIZ)
		copy(ifname, dev)
		exprs = append(exprs, &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname})
	}
	exprs = append(exprs, &expr.Immediate{Register: 1, Data: make([]byte, 4)},
		&expr.Meta{Key: expr.MetaKeyPRIORITY, SourceRegister: true, Register: 1})
	conn.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: exprs})
	if err := conn.Flush(); err != nil {
		t.Fatalf("adding the nftables table inet %s that sets priorities back to 0: %v", table, err)
	}
	t.Cleanup(func() { DeleteTable(t, ns, table) })
}

// DeleteTable removes the nftables table inet `table` from ns, if it is there.
func DeleteTable(t testing.TB, ns netns.NsHandle, table string) {
	t.Helper()
	var opts []nftables.ConnOption
	if ns.IsOpen() {
		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		t.Error(err)
		return
	}
	ts, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Errorf("listing nftables tables: %v", err)
		return
	}
	for _, tb := range ts {
		if tb.Name == table {
			conn.DelTable(tb)
			if err := conn.Flush(); err != nil {
				t.Errorf("removing the nftables table inet %s: %v", table, err)
			}
		}
	}
}
