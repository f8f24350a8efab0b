package vip

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// ShardRequest is one VIP shard of a cluster.
type ShardRequest struct {
	Shard string
	// Pool as given (the shard's own, else the cluster's); FromCluster says which.
	Pool        []string
	FromCluster bool
	Count       int
}

// ClusterRequest is one cluster of an L2 domain: its VIP shards and what its status holds.
type ClusterRequest struct {
	Key    string // namespace/name of the ClusterIngress
	Shards []ShardRequest
	Held   []v1alpha1.ShardVIPs
}

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
// address or router ID is held twice in the domain. A cluster's own pool (annotation) that
// overlaps an older cluster's own pool gets nothing new from it (PoolOverlap: such pools are
// meant to be the cluster's alone); a shard pool that does not parse keeps what it holds
// (InvalidPool); a shard with no pool at all is told (NoPool). inUse are addresses something
// else has (the domain's node addresses), never given.
func Plan(clusters []ClusterRequest, inUse map[netip.Addr]string) []ClusterPlan {
	plans := make([]ClusterPlan, len(clusters))
	type ref struct {
		cluster, shard int
		kept           bool // holdings kept as they are while the shard's settings are unusable
	}
	var claims []Claim
	var refs []ref
	// Cluster pools seen so far (older clusters'), for the overlap rule.
	type ownPool struct {
		key  string
		pool Pool
	}
	var owned []ownPool
	for ci, c := range clusters {
		plan := &plans[ci]
		heldBy := map[string]v1alpha1.ShardVIPs{}
		for _, h := range c.Held {
			heldBy[h.Shard] = h
		}
		overlapChecked := map[string]string{} // cluster pool text → overlap message ("" none)
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
			if len(s.Pool) == 0 {
				keep(Problem{v1alpha1.ReasonNoPool, fmt.Sprintf("shard %s: no VIP pool: set vip.pool on the shard or annotation %s on the cluster's source", s.Shard, v1alpha1.VIPPoolAnnotation)})
				continue
			}
			pool, err := ParsePool(s.Pool)
			if err != nil {
				keep(Problem{v1alpha1.ReasonPoolInvalid, fmt.Sprintf("shard %s: VIP pool: %v", s.Shard, err)})
				continue
			}
			poolText := strings.Join(s.Pool, ",")
			if s.FromCluster {
				msg, done := overlapChecked[poolText]
				if !done {
					for _, o := range owned {
						if o.key != c.Key && o.pool.Overlaps(pool) {
							msg = fmt.Sprintf("the cluster's VIP pool %s overlaps the pool of %s in the same L2 domain", poolText, o.key)
							break
						}
					}
					overlapChecked[poolText] = msg
				}
				if msg != "" {
					keep(Problem{v1alpha1.ReasonPoolOverlap, fmt.Sprintf("shard %s: %s; declare separate domains with %s or give disjoint pools", s.Shard, msg, v1alpha1.L2DomainAnnotation)})
					continue
				}
			}
			held.Pool, held.Count = pool, max(s.Count, 1)
			claims, refs = append(claims, held), append(refs, ref{ci, si, false})
			plan.VIPs = append(plan.VIPs, v1alpha1.ShardVIPs{Shard: s.Shard, Pool: poolText})
		}
		for _, s := range c.Shards {
			if s.FromCluster && len(s.Pool) > 0 {
				if p, err := ParsePool(s.Pool); err == nil && overlapChecked[strings.Join(s.Pool, ",")] == "" {
					owned = append(owned, ownPool{c.Key, p})
					break
				}
			}
		}
	}
	grants := Allocate(claims, inUse)
	for i, g := range grants {
		r := refs[i]
		plan := &plans[r.cluster]
		shard := clusters[r.cluster].Shards[r.shard].Shard
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
			why := "no longer in the pool or taken by an older cluster"
			if who := inUse[d]; who != "" {
				why = "in use by " + who
			}
			plan.Problems = append(plan.Problems, Problem{v1alpha1.ReasonAddressInUse, fmt.Sprintf("shard %s: VIP %s given up: %s", shard, d, why)})
		}
		if g.Exhausted != nil {
			plan.Problems = append(plan.Problems, Problem{v1alpha1.ReasonPoolExhausted, fmt.Sprintf("shard %s: %v", shard, g.Exhausted)})
		}
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
