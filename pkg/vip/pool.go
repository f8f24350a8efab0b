// Package vip decides the virtual IP addresses and VRRP router IDs of VIP shards: which addresses a
// pool offers, and which (cluster, shard) holds which address and ID. Pure functions; the
// controller gathers what is held (from status) and in use (observed), and records the result.
package vip

import (
	"fmt"
	"net/netip"
	"strings"
)

// Pool is the addresses VIPs come from: CIDRs and inclusive ranges, IPv4 or IPv6, never mixed.
type Pool struct {
	ranges []addrRange
}

type addrRange struct{ first, last netip.Addr }

// maxPoolSize bounds how many addresses one pool may offer, so a typo (a /8) cannot make an
// allocation walk millions of addresses.
const maxPoolSize = 1 << 16

// maxPoolEntries bounds a pool's CIDRs and ranges (as the CRD does for vip.pool).
const maxPoolEntries = 16

// ParsePool parses entries like "192.0.2.0/28" or "192.0.2.10-192.0.2.20". In a CIDR of more
// than two addresses the network and broadcast addresses (IPv4) are left out. Entries must not
// overlap, and the pool must not offer more than 65536 addresses.
func ParsePool(entries []string) (Pool, error) {
	if len(entries) == 0 {
		return Pool{}, fmt.Errorf("no addresses: give CIDRs or ranges")
	}
	// Objects stored before the CRD bounded pools are not bounded by its schema: keep the overlap check small.
	if len(entries) > maxPoolEntries {
		return Pool{}, fmt.Errorf("%d entries: at most %d", len(entries), maxPoolEntries)
	}
	var p Pool
	var size uint64
	for _, e := range entries {
		r, err := parseEntry(strings.TrimSpace(e))
		if err != nil {
			return Pool{}, fmt.Errorf("%q: %w", e, err)
		}
		if len(p.ranges) > 0 && r.first.Is4() != p.ranges[0].first.Is4() {
			return Pool{}, fmt.Errorf("%q: IPv4 and IPv6 in one pool", e)
		}
		for _, o := range p.ranges {
			if r.first.Compare(o.last) <= 0 && o.first.Compare(r.last) <= 0 {
				return Pool{}, fmt.Errorf("%q overlaps %s-%s", e, o.first, o.last)
			}
		}
		size += r.size()
		if size > maxPoolSize {
			return Pool{}, fmt.Errorf("more than %d addresses", maxPoolSize)
		}
		p.ranges = append(p.ranges, r)
	}
	return p, nil
}

func parseEntry(e string) (addrRange, error) {
	if first, last, ok := strings.Cut(e, "-"); ok {
		a, err := netip.ParseAddr(strings.TrimSpace(first))
		if err != nil {
			return addrRange{}, err
		}
		b, err := netip.ParseAddr(strings.TrimSpace(last))
		if err != nil {
			return addrRange{}, err
		}
		if a.Zone() != "" || b.Zone() != "" || a.Is4() != b.Is4() || b.Less(a) {
			return addrRange{}, fmt.Errorf("not a range of one address family, first to last")
		}
		return addrRange{a.Unmap(), b.Unmap()}, nil
	}
	pfx, err := netip.ParsePrefix(e)
	if err != nil {
		return addrRange{}, err
	}
	if pfx.Masked() != pfx {
		return addrRange{}, fmt.Errorf("host bits set (network is %s)", pfx.Masked())
	}
	if bits := pfx.Addr().BitLen() - pfx.Bits(); bits > 16 {
		return addrRange{}, fmt.Errorf("more than %d addresses", maxPoolSize)
	}
	r := addrRange{pfx.Addr(), lastOf(pfx)}
	if pfx.Addr().Is4() && pfx.Bits() < 31 {
		r.first, r.last = r.first.Next(), r.last.Prev()
	}
	return r, nil
}

func lastOf(p netip.Prefix) netip.Addr {
	a := p.Addr().AsSlice()
	for i := p.Bits(); i < len(a)*8; i++ {
		a[i/8] |= 1 << (7 - i%8)
	}
	out, _ := netip.AddrFromSlice(a)
	return out
}

func (r addrRange) size() uint64 {
	var n uint64
	for a := r.first; ; a = a.Next() {
		n++
		if a == r.last || n > maxPoolSize {
			return n
		}
	}
}

// Contains reports whether a is one of the pool's addresses.
func (p Pool) Contains(a netip.Addr) bool {
	for _, r := range p.ranges {
		if r.first.Compare(a) <= 0 && a.Compare(r.last) <= 0 {
			return true
		}
	}
	return false
}

// each calls f for every address in order until f returns false.
func (p Pool) each(f func(netip.Addr) bool) {
	for _, r := range p.ranges {
		for a := r.first; ; a = a.Next() {
			if !f(a) || a == r.last {
				break
			}
		}
	}
}
