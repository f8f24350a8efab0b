package canary

import (
	"fmt"
	"net/netip"
)

// Refused is the address ranges the canary never requests. The addresses it asks come from a
// user cluster's DNS targets, which come from its nodes' status, which the user cluster's owner
// can write: without this list a tenant could point the seed's requests at the seed itself
// (loopback), a cloud metadata service (link-local) or anything else the seed reaches.
type Refused []netip.Prefix

// DefaultRefused: loopback, link-local (cloud metadata lives at 169.254.169.254), unspecified,
// multicast and broadcast, in IPv4 and IPv6. Operators add the seed's own pod and Service
// ranges and its API servers with --canary-refuse-cidrs.
func DefaultRefused() Refused {
	var r Refused
	for _, s := range []string{"127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32",
		"::1/128", "fe80::/10", "::/128", "ff00::/8"} {
		r = append(r, netip.MustParsePrefix(s))
	}
	return r
}

// WithCIDRs is r plus the ranges in cidrs.
func (r Refused) WithCIDRs(cidrs []string) (Refused, error) {
	out := append(Refused(nil), r...)
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Refuses says why addr is not requested ("" when it may be). An address that does not parse
// is refused: the resolver only hands out IP literals.
func (r Refused) Refuses(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "it is not an IP address"
	}
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1 to the network stack
	for _, p := range r {
		if p.Contains(ip) {
			return "it is in " + p.String() + ", which the canary never requests"
		}
	}
	return ""
}
