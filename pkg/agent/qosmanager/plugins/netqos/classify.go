package netqos

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// tableName is the nftables table the plugin owns, in the inet family; nothing else in it is anyone else's.
const tableName = "gleaner-netqos"

// classifier keeps the table that sets the priority of pods' packets leaving through the device to their leaf's
// handle. It remembers what it last wrote, and writes only when the plan's rules differ or the table lost them.
type classifier struct {
	nsFD    int // the network namespace's file descriptor; -1 for the agent's own
	written []podRule
	device  string
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

// chain is the table's one chain: postrouting at mangle priority, which runs before source NAT (priority 100)
// rewrites a pod's address to the node's.
func chain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityMangle}
}

// apply makes the table hold one rule per address of rules, in one transaction: the chain is flushed and filled
// again, so no packet sees a half-written table. It reports whether it wrote.
func (c *classifier) apply(device string, rules []podRule) (bool, error) {
	conn, err := c.conn()
	if err != nil {
		return false, err
	}
	t := table()
	ch := chain(t)
	if c.device == device && slices.Equal(c.written, rules) {
		got, err := conn.GetRules(t, ch)
		if err == nil && len(got) == len(rules) {
			return false, nil
		}
	}
	conn.AddTable(t)
	conn.AddChain(ch)
	conn.FlushChain(ch)
	for _, r := range rules {
		conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ruleExprs(device, r)})
	}
	if err := conn.Flush(); err != nil {
		c.written = nil
		return false, fmt.Errorf("writing %d rules to the nftables table inet %s: %w", len(rules), tableName, err)
	}
	c.device, c.written = device, slices.Clone(rules)
	return true, nil
}

// ruleExprs is `oifname DEVICE ip saddr IP meta priority set 474c:MINOR` (ip6 saddr for an IPv6 address).
func ruleExprs(device string, r podRule) []expr.Any {
	proto, off := byte(unix.NFPROTO_IPV4), uint32(12) // the source address's offset in the IPv4 header
	if r.ip.Is6() {
		proto, off = unix.NFPROTO_IPV6, 8
	}
	ifname := make([]byte, unix.IFNAMSIZ)
	copy(ifname, device)
	prio := make([]byte, 4)
	binary.NativeEndian.PutUint32(prio, uint32(major)<<16|uint32(r.minor))
	addr := r.ip.AsSlice()
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
		&expr.Immediate{Register: 1, Data: prio},
		&expr.Meta{Key: expr.MetaKeyPRIORITY, SourceRegister: true, Register: 1},
	}
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
