// Package netqos shapes the node's outgoing traffic by QoS class, from the NodeSLO's resourceQOSStrategy
// networkQOS and systemStrategy.totalNetworkBandwidth.
//
// The plugin owns the root queueing discipline of one device (the default route's, or --net-qos-device): an HTB
// tree with one class per network class under a root class at the node's total bandwidth.
//
//	474c:  htb, default 474c:20
//	└── 474c:1   rate = ceil = total
//	    ├── 474c:2 → 474c:20   system: unclassified traffic, the host's and SYSTEM pods'
//	    ├── 474c:3 → 474c:30   LS: LSE, LSR and LS pods (the mid tier too)
//	    └── 474c:4 → 474c:40   BE: best-effort pods
//	             └── 474c:100+ one leaf per pod whose annotation lowers its own egress limit
//
// Each class is an inner class with a shared leaf; a pod's own leaf sits under its class, so it still counts
// against the class's limit. LS and BE exist only while their networkQOS is on. Every leaf has an fq_codel qdisc
// where the kernel has one. A root qdisc someone set before is saved under Deps.StateDir (state.go) and put back
// when network QoS is turned off.
//
// A packet's class is chosen by the pod IP it comes from, not by the pod's cgroup: a pod's packets cross a veth into
// the host's network namespace, where the kernel detaches them from the pod's socket (and so from its cgroup)
// before they reach the device. An nftables table of the agent's own, inet gleaner-netqos, sets each packet's
// priority to its class's handle in the postrouting hook at mangle priority (before source NAT rewrites the
// address) when it leaves through the device or one of the node's tunnel devices (an overlay's packet keeps its
// inner packet's priority), and HTB puts a packet whose priority names one of its classes into that class without a
// filter. Pods on the host's network share the node's IP and stay in the default class. The table's counters, the
// classes' and the pods' own devices' tell whether pods' packets reach their classes at all (check.go): a CNI that
// moves them past netfilter is the plugin's verdict in the NodeSLO's NetworkQOS condition.
//
// Netlink and nftables are spoken directly (vishvananda/netlink, google/nftables); nothing runs tc or nft.
package netqos
