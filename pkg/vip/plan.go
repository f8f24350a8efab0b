package vip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// ShardRequest is one VIP shard of a cluster.
type ShardRequest struct {
	Shard string
	// Pool as the operator gave it: the shard's own, else the profile's (spec.vip.pool).
	Pool  []string
	Count int
}

// ClusterRequest is one cluster of an L2 domain: its VIP shards, the router IDs its profile
// allows, and what its status holds.
type ClusterRequest struct {
	Key       string // namespace/name of the ClusterIngress
	Shards    []ShardRequest
	RouterIDs IDRange
	Held      []v1alpha1.ShardVIPs
	// Frozen (why) keeps what the cluster holds and gives it nothing new: its nodes cannot be
	// read, so a new VIP could be one of their addresses (which would never take it away again).
	Frozen string
}

// NodeAddress is a node of one of the domain's clusters that reports an address (observed, written
// by that cluster's owner); Plan takes, per address, every node reporting it.
type NodeAddress struct {
	Cluster string // namespace/name of the node's ClusterIngress
	Node    string
}

func (n NodeAddress) String() string { return "node " + n.Node + " of " + n.Cluster }

// Problem is why a cluster's VIPs are not all there, as a condition reason and message.
type Problem struct {
	Reason, Message string
}

// ClusterPlan is one cluster's VIPs (holders not filled in) and its problems.
type ClusterPlan struct {
	VIPs     []v1alpha1.ShardVIPs
	Problems []Problem
}

// Plan allocates the VIPs of every cluster of one L2 domain, oldest cluster first, so that no
// address or router ID is held twice in the domain; pools, domains and router ID ranges are the
// operator's (profiles), so clusters sharing a pool share it address by address. A shard pool
// that does not parse keeps what it holds (InvalidPool); a shard with no pool at all is told
// (NoPool). nodes are the addresses the domain's nodes report: never given as a new VIP, yet a
// VIP already held stays. A node reporting another cluster's VIP is its own cluster's problem
// (NodeAddressConflict, told to the cluster whose node it is); a cluster's own VIP on its own
// node is no conflict at all (some cloud providers report every address of the NIC, the VIP
// included).
func Plan(clusters []ClusterRequest, nodes map[netip.Addr][]NodeAddress) []ClusterPlan {
	plans := make([]ClusterPlan, len(clusters))
	inUse := make(map[netip.Addr]string, len(nodes))
	for a, ns := range nodes {
		if len(ns) > 0 {
			inUse[a] = ns[0].String()
		}
	}
	type ref struct {
		cluster, shard int
		kept           bool // holdings kept as they are while the shard's settings are unusable
	}
	var claims []Claim
	var refs []ref
	for ci, c := range clusters {
		plan := &plans[ci]
		heldBy := map[string]v1alpha1.ShardVIPs{}
		for _, h := range c.Held {
			heldBy[h.Shard] = h
		}
		for si, s := range c.Shards {
			h := heldBy[s.Shard]
			held := heldClaim(c.Key+"/"+s.Shard, h)
			// keep reports p and keeps what the shard holds, reserved like any holding (an older
			// claim still wins a contested address), with nothing new.
			keep := func(p Problem) {
				plan.Problems = append(plan.Problems, p)
				if len(held.Held) > 0 {
					held.Pool, held.Count = exactly(held.Held), len(held.Held)
					claims, refs = append(claims, held), append(refs, ref{ci, si, true})
					plan.VIPs = append(plan.VIPs, v1alpha1.ShardVIPs{Shard: s.Shard, Pool: h.Pool})
				}
			}
			if c.Frozen != "" {
				keep(Problem{v1alpha1.ReasonNodesNotObserved, c.Frozen})
				continue
			}
			if len(s.Pool) == 0 {
				keep(Problem{v1alpha1.ReasonNoPool, fmt.Sprintf("shard %s: no VIP pool: set vip.pool on the shard or spec.vip.pool "+
					"in the IngressProfile (a source's %s annotation is not read)", s.Shard, v1alpha1.VIPPoolAnnotation)})
				continue
			}
			pool, err := ParsePool(s.Pool)
			if err != nil {
				keep(Problem{v1alpha1.ReasonPoolInvalid, fmt.Sprintf("shard %s: VIP pool: %v", s.Shard, err)})
				continue
			}
			held.Pool, held.Count, held.IDs = pool, max(s.Count, 1), c.RouterIDs
			claims, refs = append(claims, held), append(refs, ref{ci, si, false})
			plan.VIPs = append(plan.VIPs, v1alpha1.ShardVIPs{Shard: s.Shard, Pool: strings.Join(s.Pool, ",")})
		}
	}
	grants := Allocate(claims, inUse)
	index := make(map[string]int, len(clusters))
	for i, c := range clusters {
		index[c.Key] = i
	}
	conflicts := make([][]Problem, len(clusters)) // after each cluster's own problems
	for i, g := range grants {
		r := refs[i]
		plan := &plans[r.cluster]
		shard := clusters[r.cluster].Shards[r.shard].Shard
		for _, a := range g.Addresses {
			told := map[int]bool{}
			for _, n := range nodes[a] {
				if other, ok := index[n.Cluster]; ok && other != r.cluster && !told[other] {
					told[other] = true
					conflicts[other] = append(conflicts[other], Problem{v1alpha1.ReasonNodeAddressConflict,
						fmt.Sprintf("%s reports %s, a VIP of %s (shard %s) in the L2 domain: the VIP stays there; "+
							"remove the address from the node", n, a, clusters[r.cluster].Key, shard)})
				}
			}
		}
		for j := range plan.VIPs {
			if plan.VIPs[j].Shard != shard {
				continue
			}
			for k, a := range g.Addresses {
				plan.VIPs[j].Addresses = append(plan.VIPs[j].Addresses, v1alpha1.VIPAddress{Address: a.String(), RouterID: int32(g.RouterIDs[k])})
			}
		}
		if r.kept {
			continue
		}
		for _, d := range g.Displaced {
			plan.Problems = append(plan.Problems, Problem{v1alpha1.ReasonAddressInUse,
				fmt.Sprintf("shard %s: VIP %s given up: no longer in the pool, beyond the shard's count, or held by an older cluster", shard, d)})
		}
		if g.Exhausted != nil {
			reason := v1alpha1.ReasonPoolExhausted
			if errors.Is(g.Exhausted, ErrRouterIDsExhausted) {
				reason = v1alpha1.ReasonRouterIDsExhausted
			}
			plan.Problems = append(plan.Problems, Problem{reason, fmt.Sprintf("shard %s: %v", shard, g.Exhausted)})
		}
	}
	for i := range plans {
		plans[i].Problems = append(plans[i].Problems, conflicts[i]...)
	}
	return plans
}

// heldClaim is a claim holding what status records for the shard (unparsable entries dropped).
func heldClaim(key string, h v1alpha1.ShardVIPs) Claim {
	c := Claim{Key: key}
	for _, a := range h.Addresses {
		if addr, err := netip.ParseAddr(a.Address); err == nil {
			c.Held, c.HeldIDs = append(c.Held, addr), append(c.HeldIDs, int(a.RouterID))
		}
	}
	return c
}

// exactly is a pool of just these addresses.
func exactly(addrs []netip.Addr) Pool {
	var p Pool
	for _, a := range addrs {
		p.ranges = append(p.ranges, addrRange{a, a})
	}
	return p
}
