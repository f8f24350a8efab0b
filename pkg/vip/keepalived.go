package vip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Node is one node running the shard's routers: its name (keepalived's config id) and the
// address VRRP adverts come from and go to.
type Node struct {
	Name    string
	Address netip.Addr
}

// Instance is one VIP and its VRRP router ID.
type Instance struct {
	VIP      netip.Addr
	RouterID int
	// Home is the node recorded as the VIP's home (status): kept while it is among the nodes and
	// the VIPs stay spread, so a changed set of nodes moves nothing that need not move.
	Home string
}

// KeepalivedInput is everything one shard's keepalived configuration is made of.
type KeepalivedInput struct {
	Shard     string
	Instances []Instance
	// Nodes running the shard's routers (their order does not matter: the rendering sorts).
	Nodes []Node
	// Multicast VRRP instead of unicast to the other nodes.
	Multicast bool
	// AdvertInterval between VRRP adverts; a backup takes over after about three missed ones.
	AdvertInterval time.Duration
	// HealthFile holds 0 while the local router answers and 1 while it does not; the VIP agent
	// beside keepalived writes it (keepalived watches it with inotify: no polling interval, and
	// keepalived runs no scripts).
	HealthFile string
	// AliveFile holds 0 while the VIP agent is alive and 1 once it has been silent (keepalived's
	// supervisor writes it): a node whose agent is gone is in FAULT, holds no VIP and sends no
	// advert, as its lapsed report says.
	AliveFile string
	// PrefixLen of the VIPs on the interface (32 or 128 unless the pool is a subnet the nodes
	// share and clients should reach on-link).
	PrefixLen int
}

// InterfaceVariable is defined by whoever starts keepalived (the node's interface holding its
// address), before this configuration is included.
const InterfaceVariable = "$SHARDGATE_INTERFACE"

// KeepalivedConfig renders one configuration for every node of the shard. Lines only one node
// applies start with "@<node>" (keepalived --config-id <node>): its source address and, per VIP,
// its priority. Each VIP has a home node (Homes: spread, sticky to the recorded home) with
// priority 200; the other nodes follow at 199, 198, ... in name order, which decides who takes
// over. The check lowers a failing node below every healthy one (through the health file); VRRP
// version 3 allows sub-second adverts.
func KeepalivedConfig(in KeepalivedInput) (string, error) {
	if len(in.Instances) == 0 {
		return "", fmt.Errorf("no VIPs")
	}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	for i, n := range nodes {
		if !validConfigID(n.Name) || !n.Address.IsValid() {
			return "", fmt.Errorf("node %q: invalid name or address", n.Name)
		}
		if i > 0 && nodes[i-1].Name == n.Name {
			return "", fmt.Errorf("node %q twice", n.Name)
		}
	}
	advert := in.AdvertInterval
	if advert <= 0 {
		advert = time.Second
	}
	for _, f := range []string{in.HealthFile, in.AliveFile} {
		if !strings.HasPrefix(f, "/") || strings.ContainsAny(f, "\"\n") {
			return "", fmt.Errorf("health or alive file %q: not an absolute path", f)
		}
	}
	prefix := in.PrefixLen
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Rendered by Shardgate for shard %s; every node of the shard reads this file.", in.Shard)
	w("global_defs {")
	w("  vrrp_version 3")
	w("  vrrp_garp_master_delay 0")
	w("  vrrp_garp_master_refresh 10")
	w("}")
	// The agent writes the file, failing until it has seen the router answer (a starting node
	// never outbids a healthy master), before keepalived may start. keepalived must not write
	// it (no init_file): it runs as root in another container, and the agent could not replace a
	// file root owns in the shared directory (tmpfs is sticky).
	w("track_file router_answers {")
	w("  file %q", in.HealthFile)
	w("  weight -%d", checkWeight)
	w("}")
	// Weight 0: anything but 0 in the file is FAULT.
	w("track_file agent_alive {")
	w("  file %q", in.AliveFile)
	w("  weight 0")
	w("}")
	nodeNames := make([]string, len(nodes))
	for i, n := range nodes {
		nodeNames[i] = n.Name
	}
	homes := Homes(in.Instances, nodeNames)
	for i, inst := range in.Instances {
		if !inst.VIP.IsValid() || inst.RouterID < 1 || inst.RouterID > MaxRouterID {
			return "", fmt.Errorf("VIP %d: invalid address or router ID", i)
		}
		p := prefix
		if p == 0 {
			p = inst.VIP.BitLen()
		}
		w("vrrp_instance %s_%d {", safeName(in.Shard), i)
		w("  state BACKUP")
		w("  interface %s", InterfaceVariable)
		w("  virtual_router_id %d", inst.RouterID)
		w("  advert_int %s", seconds(advert))
		w("  priority 100")
		next := 199
		for _, n := range nodes {
			p := 200
			if n.Name != homes[i] {
				p, next = next, next-1
			}
			w("@%s  priority %d", n.Name, p)
		}
		if !in.Multicast {
			for _, n := range nodes {
				w("@%s  unicast_src_ip %s", n.Name, n.Address)
			}
			w("  unicast_peer {")
			for _, n := range nodes {
				w("    %s", n.Address)
			}
			w("  }")
		}
		w("  virtual_ipaddress {")
		w("    %s/%d", inst.VIP, p)
		w("  }")
		w("  track_file {")
		w("    router_answers")
		w("    agent_alive")
		w("  }")
		w("}")
	}
	return b.String(), nil
}

// checkWeight is subtracted from a node's priority while its router does not answer: more than
// the spread of healthy priorities, so any healthy node outbids it.
const checkWeight = 100

// Homes picks each VIP's home among nodes (sorted names): its recorded home while that node
// has fewer than its share (⌈VIPs/nodes⌉) of homes, else the node with the fewest homes (then
// by name). So VIPs start spread, and a node joining or leaving moves only the VIPs it must.
func Homes(instances []Instance, nodes []string) []string {
	homes := make([]string, len(instances))
	if len(nodes) == 0 {
		return homes
	}
	share := (len(instances) + len(nodes) - 1) / len(nodes)
	count := map[string]int{}
	for i, inst := range instances {
		if slices.Contains(nodes, inst.Home) && count[inst.Home] < share {
			homes[i] = inst.Home
			count[inst.Home]++
		}
	}
	for i := range instances {
		if homes[i] != "" {
			continue
		}
		best := nodes[0]
		for _, n := range nodes[1:] {
			if count[n] < count[best] {
				best = n
			}
		}
		homes[i] = best
		count[best]++
	}
	return homes
}

func seconds(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".")
}

// validConfigID: node names are DNS subdomains; keepalived takes the id up to white space.
func validConfigID(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n{}#!\"'@$")
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
