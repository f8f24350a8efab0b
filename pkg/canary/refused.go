package canary

import (
	"fmt"
	"net/netip"

	"github.com/shardgate/shardgate/pkg/nodeports"
)

// Refused is the address ranges the canary never requests. The addresses it asks come from a
// user cluster's DNS targets, which come from its nodes' status, which the user cluster's owner
// can write: without this list a tenant could point the seed's requests at the seed itself
// (loopback), a cloud metadata service (link-local), the seed's own network or anything else the
// seed reaches.
type Refused struct {
	// never: requested under no circumstances (the defaults and the operator's refused ranges).
	never []netip.Prefix
	// private: requested only inside allowed (where the operator says user clusters' nodes are).
	private []netip.Prefix
	allowed []netip.Prefix
}

// DefaultRefused never requests loopback, link-local (cloud metadata lives at 169.254.169.254),
// unspecified, multicast and broadcast, in IPv4 and IPv6, nor IPv6 prefixes that embed an IPv4
// address (NAT64, 6to4); and private ranges (RFC 1918, CGNAT
// 100.64.0.0/10, IPv6 ULA fc00::/7), where the seed's own network usually is, unless the
// operator allows them (WithAllowed, --canary-allow-cidrs: where user clusters' nodes are).
// Operators add the seed's own pod and Service ranges and its API servers with WithCIDRs
// (--canary-refuse-cidrs), which no allowed range overrides.
func DefaultRefused() Refused {
	return Refused{
		never: mustPrefixes("127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32",
			"::1/128", "fe80::/10", "::/128", "ff00::/8",
			// NAT64 (RFC 6052, RFC 8215) and 6to4 embed an IPv4 address the seed's translator
			// would reach: the metadata service or the seed's own network behind an IPv6 literal.
			"64:ff9b::/96", "64:ff9b:1::/48", "2002::/16"),
		private: mustPrefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"),
	}
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}

func parsePrefixes(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// WithCIDRs is r plus the ranges in cidrs, never requested.
func (r Refused) WithCIDRs(cidrs []string) (Refused, error) {
	ps, err := parsePrefixes(cidrs)
	if err != nil {
		return Refused{}, err
	}
	r.never = append(append([]netip.Prefix(nil), r.never...), ps...)
	return r, nil
}

// WithAllowed is r requesting the private addresses inside cidrs (the ranges user clusters'
// nodes are reached at). It never lifts loopback, link-local and the like, nor WithCIDRs' ranges.
func (r Refused) WithAllowed(cidrs []string) (Refused, error) {
	ps, err := parsePrefixes(cidrs)
	if err != nil {
		return Refused{}, err
	}
	r.allowed = append(append([]netip.Prefix(nil), r.allowed...), ps...)
	return r, nil
}

// Refuses says why addr is not requested ("" when it may be). An address that does not parse
// is refused: the resolver only hands out IP literals.
func (r Refused) Refuses(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "it is not an IP address"
	}
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1 to the network stack
	for _, p := range r.never {
		if p.Contains(ip) {
			return "it is in " + p.String() + ", which the canary never requests"
		}
	}
	for _, p := range r.private {
		if p.Contains(ip) && !containedIn(ip, r.allowed) {
			return "it is in the private range " + p.String() + ", which the canary requests only where allowed (--canary-allow-cidrs)"
		}
	}
	return ""
}

func containedIn(ip netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// PortRange is the node ports the canary requests a NodePort shard at: what a user cluster's
// API server says is the router Service's nodePort is its owner's to write, and outside the
// cluster's node-port range it is not a router's port but any service on the node.
type PortRange struct{ Min, Max int }

// DefaultNodePorts is Kubernetes' default --service-node-port-range.
var DefaultNodePorts = PortRange{Min: 30000, Max: 32767}

// ParsePortRange parses "min-max" (nodeports.Parse).
func ParsePortRange(s string) (PortRange, error) {
	r, err := nodeports.Parse(s)
	return PortRange{Min: int(r.Min), Max: int(r.Max)}, err
}

// Refuses says why port is not requested ("" when it may be).
func (p PortRange) Refuses(port int) string {
	if port < p.Min || port > p.Max {
		return fmt.Sprintf("port %d is outside the node-port range %d-%d, which the canary never leaves", port, p.Min, p.Max)
	}
	return ""
}
