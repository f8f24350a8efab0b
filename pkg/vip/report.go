package vip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// What a VIP agent reports in its node's Lease (names.VIPNodeLeaseName), besides the holder
// identity (the node) and the renewal that keeps the report fresh.
const (
	// ReportConfigAnnotation is the SHA-256 (hex) of the configuration keepalived runs; absent
	// while keepalived has not started.
	ReportConfigAnnotation = "shardgate.io/vip-config"
	// ReportPeersAnnotation lists the nodes that configuration names (comma-separated): the nodes
	// this node sends its adverts to.
	ReportPeersAnnotation = "shardgate.io/vip-peers"
	// ReportHeldAnnotation lists the VIPs on the node's interface (comma-separated).
	ReportHeldAnnotation = "shardgate.io/vips-held"
)

// Bounds on what a report may carry: a Lease is writable by whoever owns the user cluster.
const (
	maxReportedPeers = 256
	maxReportedHeld  = 256
)

// NodeReport is one VIP agent's report about its node.
type NodeReport struct {
	Node string
	// Config is the digest of the configuration keepalived runs; "" while it does not run.
	Config string
	// Peers are the nodes that configuration names.
	Peers []string
	// Held are the VIPs on the node's interface.
	Held []netip.Addr
	// Expires is when the report stops being fresh (the Lease's renewal plus its duration).
	Expires time.Time
}

// Running says whether keepalived runs a configuration on the node.
func (r NodeReport) Running() bool { return r.Config != "" }

// Annotations are the report's annotations on its Lease.
func (r NodeReport) Annotations() map[string]string {
	held := make([]string, len(r.Held))
	for i, a := range r.Held {
		held[i] = a.String()
	}
	a := map[string]string{ReportHeldAnnotation: strings.Join(held, ",")}
	if r.Running() {
		a[ReportConfigAnnotation], a[ReportPeersAnnotation] = r.Config, strings.Join(r.Peers, ",")
	}
	return a
}

// ParseReport reads a node's report from its Lease. A Lease without a holder or renewal is no
// report; peers beyond the bound, and held entries that are not addresses, are left out.
func ParseReport(l *coordinationv1.Lease) (NodeReport, bool) {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return NodeReport{}, false
	}
	r := NodeReport{Node: *s.HolderIdentity, Config: l.Annotations[ReportConfigAnnotation],
		Expires: s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)}
	if r.Running() {
		r.Peers = splitList(l.Annotations[ReportPeersAnnotation], maxReportedPeers)
	}
	for _, h := range splitList(l.Annotations[ReportHeldAnnotation], maxReportedHeld) {
		if a, err := netip.ParseAddr(h); err == nil {
			r.Held = append(r.Held, a.Unmap())
		}
	}
	return r, true
}

func splitList(s string, limit int) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && len(out) < limit {
			out = append(out, f)
		}
	}
	return out
}

// ConfigNodes are the nodes a rendered configuration names (its "@<node>" lines), sorted.
func ConfigNodes(config string) []string {
	var out []string
	for _, line := range strings.Split(config, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "@") || len(f[0]) == 1 {
			continue
		}
		if n := f[0][1:]; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// MayStart decides whether node may start keepalived with a configuration naming nodes: only
// once it is among them, and every other of them that reports fresh and runs keepalived runs a
// configuration naming node too. Until then such a peer sends its adverts to its old peers only;
// node would hear none and take every VIP that peer holds (two masters). A peer with no fresh
// report, or not running keepalived, holds nothing and sends nothing: it does not hold node
// back (two newcomers do not wait for each other, and a dead peer's report expires). The reason
// names what node waits for.
func MayStart(node string, nodes []string, reports map[string]NodeReport, now time.Time) (bool, string) {
	if !slices.Contains(nodes, node) {
		return false, fmt.Sprintf("the configuration does not name %s yet", node)
	}
	var waiting []string
	for _, p := range nodes {
		r, ok := reports[p]
		// A peer holding VIPs sends adverts whatever it reports of its configuration (an agent that
		// restarted beside a running keepalived has no digest yet): it counts, peers unknown.
		if p == node || !ok || r.Node != p || !now.Before(r.Expires) || (!r.Running() && len(r.Held) == 0) {
			continue
		}
		if !slices.Contains(r.Peers, node) {
			waiting = append(waiting, p)
		}
	}
	if len(waiting) > 0 {
		return false, fmt.Sprintf("still running a configuration without %s: %s", node, strings.Join(waiting, ", "))
	}
	return true, ""
}

// Holders are, per VIP, the nodes whose fresh reports say they hold it (sorted), among the
// nodes isNode accepts. More than one is a split: each believes it is the master.
func Holders(reports []NodeReport, isNode func(string) bool, now time.Time) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, r := range reports {
		if !now.Before(r.Expires) || !isNode(r.Node) {
			continue
		}
		for _, a := range r.Held {
			if !slices.Contains(out[a], r.Node) {
				out[a] = append(out[a], r.Node)
			}
		}
	}
	for a := range out {
		slices.Sort(out[a])
	}
	return out
}

// FillHolders sets each VIP's holder from holders (per shard, as Holders returns them). A VIP
// that more than one node holds gets no holder (status cannot vouch for either) and a
// DuplicateHolder problem naming the nodes.
func FillHolders(vips []v1alpha1.ShardVIPs, holders map[string]map[netip.Addr][]string) []Problem {
	var problems []Problem
	for i := range vips {
		for j := range vips[i].Addresses {
			a := &vips[i].Addresses[j]
			a.Holder = ""
			addr, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			switch h := holders[vips[i].Shard][addr.Unmap()]; len(h) {
			case 0:
			case 1:
				a.Holder = h[0]
			default:
				problems = append(problems, Problem{v1alpha1.ReasonDuplicateHolder,
					fmt.Sprintf("shard %s: VIP %s is held by %s at once", vips[i].Shard, a.Address, strings.Join(h, " and "))})
			}
		}
	}
	return problems
}
