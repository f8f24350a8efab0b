package vip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// MaxRouterID is the highest VRRP virtual router ID; IDs are 1..255 per L2 domain.
const MaxRouterID = 255

// IDRange is the VRRP router IDs a claim may be given, first to last inclusive; the zero value
// is every ID (1..MaxRouterID). The operator narrows it to keep clear of other VRRP users of the
// segment (a gateway on ID 1).
type IDRange struct {
	First, Last int
}

// bounds is the range with the zero value resolved and clamped to 1..MaxRouterID.
func (r IDRange) bounds() (int, int) {
	if r == (IDRange{}) {
		return 1, MaxRouterID
	}
	return max(r.First, 1), min(r.Last, MaxRouterID)
}

func (r IDRange) String() string {
	first, last := r.bounds()
	return fmt.Sprintf("%d-%d", first, last)
}

// Claim is what one (cluster, shard) wants from a pool and what it already holds (from status).
// Claims are given oldest first: on a contested address or ID the earlier claim keeps it.
type Claim struct {
	Key   string // "<namespace>/<cluster>/<shard>", for messages
	Pool  Pool
	Count int
	// IDs: the router IDs the claim may have; unique in the domain whatever the ranges.
	IDs IDRange
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
	// Displaced are held addresses given up: held by an earlier claim, no longer in the pool, or
	// beyond Count.
	Displaced []netip.Addr
}

// Allocate grants every claim its addresses from its pool, sticky: a claim keeps what it holds while
// the address is in the pool and not held by an earlier claim; new addresses are the lowest free
// ones, never one another claim holds nor one in use by anything else (inUse: address → who,
// observed). What is observed never takes a held address away: node addresses are written by
// cluster owners, and one that names another cluster's VIP is that cluster owner's conflict to
// be told of (Plan), not a reason to move the VIP. Router IDs follow the same rules within the
// claim's range (a held ID outside it is replaced, the address kept); an ID another claim holds is
// never given, so a range used up is the claim's exhaustion, not another's loss. A claim that
// cannot get all it asks for keeps what it has and is told why; no other claim is disturbed.
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
			if len(g.Addresses) >= c.Count || !c.Pool.Contains(a) || takenAddr[a] {
				g.Displaced = append(g.Displaced, a)
				continue
			}
			if first, last := c.IDs.bounds(); id < first || id > last || takenID[id] {
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
				id = freeID(takenID, c.IDs)
			}
			if id == 0 {
				g.Exhausted = idsExhausted(c)
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
				g.Exhausted = fmt.Errorf("pool exhausted: %s wants %d VIPs, got %d%s", c.Key, c.Count, len(g.Addresses), inUseIn(c.Pool, inUse, takenAddr))
				break
			}
			id := freeID(takenID, c.IDs)
			if id == 0 {
				g.Exhausted = idsExhausted(c)
				break
			}
			takenAddr[next] = true
			g.Addresses, g.RouterIDs = append(g.Addresses, next), append(g.RouterIDs, id)
		}
	}
	return grants
}

// freeID takes and returns the lowest free router ID of the range, or 0 when none is left.
func freeID(taken map[int]bool, r IDRange) int {
	first, last := r.bounds()
	for id := first; id <= last; id++ {
		if !taken[id] {
			taken[id] = true
			return id
		}
	}
	return 0
}

// ErrRouterIDsExhausted: a claim's range of router IDs is used up in its L2 domain.
var ErrRouterIDsExhausted = errors.New("router IDs exhausted")

func idsExhausted(c Claim) error {
	return fmt.Errorf("%w: %s wants %d VIPs and every VRRP router ID of its range %s is in use in the L2 domain",
		ErrRouterIDsExhausted, c.Key, c.Count, c.IDs)
}

// inUseIn says which of the pool's free addresses something else has (the why of an exhaustion);
// a held VIP that a node also reports is not one of them.
func inUseIn(p Pool, inUse map[netip.Addr]string, held map[netip.Addr]bool) string {
	var parts []string
	p.each(func(a netip.Addr) bool {
		if who := inUse[a]; who != "" && !held[a] {
			parts = append(parts, a.String()+" by "+who)
		}
		return len(parts) < 8
	})
	if len(parts) == 0 {
		return ""
	}
	return " (in use: " + strings.Join(parts, ", ") + ")"
}
