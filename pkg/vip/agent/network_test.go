package agent

import (
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/pkg/vip"
)

// fakeNetwork is a node whose interfaces the test sets: which VIPs keepalived holds, without
// root or keepalived.
type fakeNetwork struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	err   error
}

func (n *fakeNetwork) InterfaceOf(addr netip.Addr) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for iface, as := range n.addrs {
		if slices.Contains(as, addr) {
			return iface, nil
		}
	}
	return "", errors.New("no interface holds it")
}

func (n *fakeNetwork) Addrs(iface string) (map[netip.Addr]bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return nil, n.err
	}
	out := map[netip.Addr]bool{}
	for _, a := range n.addrs[iface] {
		out[a] = true
	}
	return out, nil
}

func (n *fakeNetwork) set(iface string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addrs[iface] = nil
	for _, a := range addrs {
		n.addrs[iface] = append(n.addrs[iface], netip.MustParseAddr(a))
	}
}

// handed is the report send handed to the sender (nil: the report is to lapse).
func handed(t *testing.T, r *reports) *vip.NodeReport {
	t.Helper()
	select {
	case rep := <-r.latest:
		return rep
	default:
		t.Fatal("send handed no report")
		return nil
	}
}

// TestReportsSayWhichVIPsTheInterfaceHolds: the report names the rendered VIPs found on the
// node's interface, only those (not the node's own address, not a VIP of another shard), follows
// them as keepalived takes and gives them up, and lapses (nil) while the interface cannot be read.
func TestReportsSayWhichVIPsTheInterfaceHolds(t *testing.T) {
	n := &fakeNetwork{addrs: map[string][]netip.Addr{}}
	n.set("eth0", "192.0.2.10")
	o := Options{Reporter: &Reporter{}, Network: n, NodeIP: netip.MustParseAddr("192.0.2.10")}
	iface, err := o.network().InterfaceOf(o.NodeIP)
	if err != nil || iface != "eth0" {
		t.Fatalf("InterfaceOf: %q %v", iface, err)
	}
	r := newReports(o, iface)
	r.loaded(Rendered{Config: "c", VIPs: "198.51.100.1 1\n198.51.100.2 2\n"})
	digestC := digest([]byte("c"))
	for _, step := range []struct {
		name string
		on   []string // the interface's addresses
		err  error
		held []string // nil with lapse
		gone bool     // the report lapses
	}{
		{name: "none held", on: []string{"192.0.2.10"}},
		{name: "keepalived took one", on: []string{"192.0.2.10", "198.51.100.2"}, held: []string{"198.51.100.2"}},
		{name: "and the other; a VIP of another shard is not reported",
			on: []string{"192.0.2.10", "198.51.100.1", "198.51.100.2", "203.0.113.9"}, held: []string{"198.51.100.1", "198.51.100.2"}},
		{name: "the interface cannot be read: the report lapses", err: errors.New("netlink: permission denied"), gone: true},
		{name: "readable again: reported again", on: []string{"198.51.100.1"}, held: []string{"198.51.100.1"}},
	} {
		n.set("eth0", step.on...)
		n.mu.Lock()
		n.err = step.err
		n.mu.Unlock()
		r.send()
		rep := handed(t, r)
		if step.gone {
			if rep != nil {
				t.Errorf("%s: handed %+v, want the report to lapse", step.name, rep)
			}
			continue
		}
		if rep == nil {
			t.Fatalf("%s: the report lapsed", step.name)
		}
		var got []string
		for _, a := range rep.Held {
			got = append(got, a.String())
		}
		if !slices.Equal(got, step.held) || rep.Config != digestC {
			t.Errorf("%s: held %v config %q, want %v %q", step.name, got, rep.Config, step.held, digestC)
		}
	}
}

func TestHeld(t *testing.T) {
	v := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	on := map[netip.Addr]bool{netip.MustParseAddr("10.0.0.1"): true, netip.MustParseAddr("10.0.0.3"): true}
	if got := held(on, v("10.0.0.1", "10.0.0.2", "10.0.0.3")); !slices.Equal(got, v("10.0.0.1", "10.0.0.3")) {
		t.Errorf("held %v", got)
	}
	if got := held(on, nil); got != nil {
		t.Errorf("no VIPs rendered: held %v", got)
	}
}
