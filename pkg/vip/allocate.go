package vip

import (
	"fmt"
	"net/netip"
	"strings"
)

// MaxRouterID is the highest VRRP virtual router ID; IDs are 1..255 per L2 domain.
const MaxRouterID = 255

// Claim is what one (cluster, shard) wants from a pool and what it already holds (from status).
// Claims are given oldest first: on a contested address or ID the earlier claim keeps it.
type Claim struct {
	Key   string // "<namespace>/<cluster>/<shard>", for messages
	Pool  Pool
	Count int
	// Held addresses and their router IDs, index for index (from the last recorded status).
	Held    []netip.Addr
	HeldIDs []int
}

// Grant is one claim's outcome: its addresses and router IDs, index for index.
type Grant struct {
	Addresses []netip.Addr
	RouterIDs []int
	// Exhausted: the pool (or the router IDs) could not give Count; Addresses holds what could be
	// kept or given.
	Exhausted error
	// Displaced are held addresses given up: in use by something else now, held by an earlier
	// claim, or no longer in the pool.
	Displaced []netip.Addr
}

// Allocate grants every claim its addresses from its pool, sticky: a claim keeps what it holds while
// the address is in the pool, not in use by anything else (inUse: address → who, observed) and
// not held by an earlier claim; new addresses are the lowest free ones, never one another claim
// holds. Router IDs follow the same rules within 1..MaxRouterID. A claim that cannot get all it
// asks for keeps what it has and is told why; no other claim is disturbed.
func Allocate(claims []Claim, inUse map[netip.Addr]string) []Grant {
	grants := make([]Grant, len(claims))
	takenAddr := map[netip.Addr]bool{}
	takenID := map[int]bool{}
	// First pass: what each claim may keep, in order, so an earlier claim wins a contested one.
	for i, c := range claims {
		g := &grants[i]
		for j, a := range c.Held {
			id := 0
			if j < len(c.HeldIDs) {
				id = c.HeldIDs[j]
			}
			if len(g.Addresses) >= c.Count || !c.Pool.Contains(a) || takenAddr[a] || inUse[a] != "" {
				g.Displaced = append(g.Displaced, a)
				continue
			}
			if id < 1 || id > MaxRouterID || takenID[id] {
				id = 0 // the address stays; a new ID is found below
			}
			takenAddr[a] = true
			if id != 0 {
				takenID[id] = true
			}
			g.Addresses, g.RouterIDs = append(g.Addresses, a), append(g.RouterIDs, id)
		}
	}
	// Second pass: fill up, lowest free first.
	for i, c := range claims {
		g := &grants[i]
		var addrs []netip.Addr
		var ids []int
		for j, id := range g.RouterIDs {
			if id == 0 {
				id = freeID(takenID)
			}
			if id == 0 {
				g.Exhausted = fmt.Errorf("all %d VRRP router IDs of the L2 domain are in use", MaxRouterID)
				delete(takenAddr, g.Addresses[j])
				continue
			}
			addrs, ids = append(addrs, g.Addresses[j]), append(ids, id)
		}
		g.Addresses, g.RouterIDs = addrs, ids
		for g.Exhausted == nil && len(g.Addresses) < c.Count {
			var next netip.Addr
			c.Pool.each(func(a netip.Addr) bool {
				if takenAddr[a] || inUse[a] != "" {
					return true
				}
				next = a
				return false
			})
			if !next.IsValid() {
				g.Exhausted = fmt.Errorf("pool exhausted: %s wants %d VIPs, got %d%s", c.Key, c.Count, len(g.Addresses), inUseIn(c.Pool, inUse))
				break
			}
			id := freeID(takenID)
			if id == 0 {
				g.Exhausted = fmt.Errorf("all %d VRRP router IDs of the L2 domain are in use", MaxRouterID)
				break
			}
			takenAddr[next] = true
			g.Addresses, g.RouterIDs = append(g.Addresses, next), append(g.RouterIDs, id)
		}
	}
	return grants
}

// freeID takes and returns the lowest free router ID, or 0 when none is left.
func freeID(taken map[int]bool) int {
	for id := 1; id <= MaxRouterID; id++ {
		if !taken[id] {
			taken[id] = true
			return id
		}
	}
	return 0
}

// inUseIn says which of the pool's addresses something else has (the why of an exhaustion).
func inUseIn(p Pool, inUse map[netip.Addr]string) string {
	var parts []string
	p.each(func(a netip.Addr) bool {
		if who := inUse[a]; who != "" {
			parts = append(parts, a.String()+" by "+who)
		}
		return len(parts) < 8
	})
	if len(parts) == 0 {
		return ""
	}
	return " (in use: " + strings.Join(parts, ", ") + ")"
}
