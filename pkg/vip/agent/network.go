package agent

import (
	"fmt"
	"net"
	"net/netip"
)

// Network is what the agent asks the node's network: which interface holds an address, and
// which addresses an interface holds. The system's answers need the node (and a VIP on an
// interface needs keepalived with NET_ADMIN); behind this interface the decisions that follow
// from them are tested without root.
type Network interface {
	InterfaceOf(addr netip.Addr) (string, error)
	Addrs(iface string) (map[netip.Addr]bool, error)
}

// SystemNetwork reads the node's interfaces.
type SystemNetwork struct{}

// Addrs are the addresses on the named interface.
func (SystemNetwork) Addrs(name string) (map[netip.Addr]bool, error) {
	i, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := i.Addrs()
	if err != nil {
		return nil, err
	}
	out := map[netip.Addr]bool{}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out, nil
}

// InterfaceOf names the interface holding addr.
func (SystemNetwork) InterfaceOf(addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return i.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s", addr)
}

// InterfaceOf names the node's interface holding addr.
func InterfaceOf(addr netip.Addr) (string, error) { return SystemNetwork{}.InterfaceOf(addr) }

// network is o's Network, the system's when none is set.
func (o Options) network() Network {
	if o.Network == nil {
		return SystemNetwork{}
	}
	return o.Network
}
