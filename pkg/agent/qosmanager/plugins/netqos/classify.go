package netqos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// tableName is the nftables table the plugin owns, in the inet family; nothing else in it is anyone else's.
const tableName = "gleaner-netqos"

// classifier keeps the table that sets the priority of pods' packets leaving through the egress devices to their
// leaf's handle. It remembers what it last wrote, and writes only when the plan's rules or the devices differ, or
// the table lost them.
type classifier struct {
	nsFD    int // the network namespace's file descriptor; -1 for the agent's own
	written []podRule
	devices []string
}

func (c *classifier) conn() (*nftables.Conn, error) {
	var opts []nftables.ConnOption
	if c.nsFD >= 0 {
		opts = append(opts, nftables.WithNetNSFd(c.nsFD))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("opening an nftables connection: %w", err)
	}
	return conn, nil
}

func table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyINet, Name: tableName}
}

// chain is the table's classifying chain: postrouting at mangle priority, which runs before source NAT (priority
// 100) rewrites a pod's address to the node's.
func chain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityMangle}
}

// witnessChain is the table's counting chain: prerouting, where every packet a pod sends into the node's IP stack
// passes, whether it is forwarded or for the node itself (node-local DNS, a host-network service), and dropped
// or not later; a datapath that moves the packet past netfilter moves it past this hook too.
func witnessChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityMangle}
}

// apply makes the table hold, for each address of rules, a rule that counts its packets in prerouting (the
// classify check's witness that netfilter sees them) and one per egress device in postrouting that counts and
// classifies those leaving through it, in one transaction: the chains are flushed and filled again, so no packet
// sees a half-written table. It reports
// whether it wrote.
func (c *classifier) apply(devices []string, rules []podRule) (bool, error) {
	conn, err := c.conn()
	if err != nil {
		return false, err
	}
	t := table()
	ch, wch := chain(t), witnessChain(t)
	if slices.Equal(c.devices, devices) && slices.Equal(c.written, rules) {
		got, err := conn.GetRules(t, ch)
		seen, errSeen := conn.GetRules(t, wch)
		if err == nil && errSeen == nil && len(got) == len(rules)*len(devices) && len(seen) == len(rules) {
			return false, nil
		}
	}
	conn.AddTable(t)
	conn.AddChain(ch)
	conn.FlushChain(ch)
	conn.AddChain(wch)
	conn.FlushChain(wch)
	for _, r := range rules {
		conn.AddRule(&nftables.Rule{Table: t, Chain: wch, Exprs: ruleExprs("", r), UserData: []byte(ruleSeen)})
		for _, dev := range devices {
			conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ruleExprs(dev, r), UserData: []byte(ruleClassify)})
		}
	}
	if err := conn.Flush(); err != nil {
		c.written = nil
		return false, fmt.Errorf("writing %d rules to the nftables table inet %s: %w", len(rules)*(1+len(devices)), tableName, err)
	}
	c.devices, c.written = slices.Clone(devices), slices.Clone(rules)
	return true, nil
}

// The rules' kinds, in their user data.
const (
	ruleSeen     = "seen"     // counts the pod's packets entering the node's IP stack, whichever way they go
	ruleClassify = "classify" // counts and classifies those leaving through one egress device
)

// ruleExprs is `ip saddr IP counter` for device "" (the witness), else `oifname DEVICE ip saddr IP counter meta
// priority set 474c:MINOR` (ip6 saddr for an IPv6 address).
func ruleExprs(device string, r podRule) []expr.Any {
	proto, off := byte(unix.NFPROTO_IPV4), uint32(12) // the source address's offset in the IPv4 header
	if r.ip.Is6() {
		proto, off = unix.NFPROTO_IPV6, 8
	}
	addr := r.ip.AsSlice()
	var exprs []expr.Any
	if device != "" {
		ifname := make([]byte, unix.IFNAMSIZ)
		copy(ifname, device)
		exprs = append(exprs, &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname})
	}
	exprs = append(exprs,
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
		&expr.Counter{})
	if device == "" {
		return exprs
	}
	prio := make([]byte, 4)
	binary.NativeEndian.PutUint32(prio, uint32(major)<<16|uint32(r.minor))
	return append(exprs,
		&expr.Immediate{Register: 1, Data: prio},
		&expr.Meta{Key: expr.MetaKeyPRIORITY, SourceRegister: true, Register: 1})
}

// counts reads the rules' packet counters, keyed by kind, address and (for classifying rules) device; nil when
// the table or its chain is gone.
func (c *classifier) counts() (map[string]uint64, error) {
	conn, err := c.conn()
	if err != nil {
		return nil, err
	}
	got, err := conn.GetRules(table(), chain(table()))
	if err != nil {
		return nil, fmt.Errorf("reading the counters of the nftables table inet %s: %w", tableName, err)
	}
	seen, err := conn.GetRules(table(), witnessChain(table()))
	if err != nil {
		return nil, fmt.Errorf("reading the counters of the nftables table inet %s: %w", tableName, err)
	}
	got = append(got, seen...)
	out := make(map[string]uint64, len(got))
	for _, r := range got {
		key := []string{string(r.UserData)}
		var packets uint64
		var loaded expr.Any // what the next comparison compares
		for _, e := range r.Exprs {
			switch e := e.(type) {
			case *expr.Meta, *expr.Payload:
				loaded = e
			case *expr.Cmp:
				if m, ok := loaded.(*expr.Meta); ok && m.Key == expr.MetaKeyOIFNAME {
					key = append(key, string(bytes.TrimRight(e.Data, "\x00")))
				} else if a, ok := netip.AddrFromSlice(e.Data); ok && isPayload(loaded) {
					key = append(key, a.String())
				}
			case *expr.Counter:
				packets = e.Packets
			}
		}
		out[strings.Join(key, " ")] = packets
	}
	return out, nil
}

func isPayload(e expr.Any) bool {
	_, ok := e.(*expr.Payload)
	return ok
}

// remove deletes the table if it exists; it reports whether it did.
func (c *classifier) remove() (bool, error) {
	conn, err := c.conn()
	if err != nil {
		return false, err
	}
	ts, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("listing nftables tables: %w", err)
	}
	c.written = nil
	if !slices.ContainsFunc(ts, func(t *nftables.Table) bool { return t.Name == tableName }) {
		return false, nil
	}
	conn.DelTable(table())
	if err := conn.Flush(); err != nil {
		return false, fmt.Errorf("removing the nftables table inet %s: %w", tableName, err)
	}
	return true, nil
}
