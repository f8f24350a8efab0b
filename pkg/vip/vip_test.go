package vip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestParsePool(t *testing.T) {
	for _, tt := range []struct {
		entries []string
		want    []string // every address, in order
		err     string
	}{
		{entries: []string{"192.0.2.0/30"}, want: []string{"192.0.2.1", "192.0.2.2"}},
		{entries: []string{"192.0.2.8/31"}, want: []string{"192.0.2.8", "192.0.2.9"}},
		{entries: []string{"192.0.2.7/32", "192.0.2.10 - 192.0.2.11"}, want: []string{"192.0.2.7", "192.0.2.10", "192.0.2.11"}},
		{entries: []string{"2001:db8::/127"}, want: []string{"2001:db8::", "2001:db8::1"}},
		{entries: nil, err: "no addresses"},
		{entries: []string{"192.0.2.1/30"}, err: "host bits set"},
		{entries: []string{"192.0.2.0/28", "192.0.2.5-192.0.2.6"}, err: "overlaps"},
		{entries: []string{"192.0.2.9-192.0.2.1"}, err: "first to last"},
		{entries: []string{"192.0.2.0/30", "2001:db8::/127"}, err: "IPv4 and IPv6"},
		{entries: []string{"10.0.0.0/8"}, err: "more than 65536"},
		{entries: []string{"10.0.0.0-10.255.0.0"}, err: "more than 65536"},
		{entries: []string{"banana"}, err: "banana"},
		{entries: strings.Split(strings.Repeat("192.0.2.1/32,", 17), ",")[:17], err: "at most 16"},
	} {
		t.Run(strings.Join(tt.entries, ","), func(t *testing.T) {
			p, err := ParsePool(tt.entries)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			p.each(func(a netip.Addr) bool { got = append(got, a.String()); return true })
			if !slices.Equal(got, tt.want) {
				t.Fatalf("addresses %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	pool, err := ParsePool([]string{"10.0.0.0/29"}) // .1 to .6
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		addrs     []string
		ids       []int
		exhausted string
		displaced []string
	}
	for _, tt := range []struct {
		name   string
		claims []Claim
		inUse  map[netip.Addr]string
		want   []want
	}{
		{
			name:   "new claims get the lowest free addresses and IDs, in order",
			claims: []Claim{{Key: "a", Count: 2}, {Key: "b", Count: 1}},
			want:   []want{{addrs: []string{"10.0.0.1", "10.0.0.2"}, ids: []int{1, 2}}, {addrs: []string{"10.0.0.3"}, ids: []int{3}}},
		},
		{
			name: "held addresses and IDs stay, a newcomer gets what nobody holds",
			claims: []Claim{
				{Key: "new", Count: 1},
				{Key: "old", Count: 1, Held: addrs("10.0.0.1"), HeldIDs: []int{1}},
			},
			want: []want{{addrs: []string{"10.0.0.2"}, ids: []int{2}}, {addrs: []string{"10.0.0.1"}, ids: []int{1}}},
		},
		{
			name: "a contested address stays with the earlier claim; the later one is told and moves",
			claims: []Claim{
				{Key: "first", Count: 1, Held: addrs("10.0.0.4"), HeldIDs: []int{7}},
				{Key: "second", Count: 1, Held: addrs("10.0.0.4"), HeldIDs: []int{7}},
			},
			want: []want{{addrs: []string{"10.0.0.4"}, ids: []int{7}}, {addrs: []string{"10.0.0.1"}, ids: []int{1}, displaced: []string{"10.0.0.4"}}},
		},
		{
			name:   "a held address something else reports stays; a free one in use is never given",
			claims: []Claim{{Key: "a", Count: 2, Held: addrs("10.0.0.1"), HeldIDs: []int{1}}},
			inUse:  map[netip.Addr]string{netip.MustParseAddr("10.0.0.1"): "node n1", netip.MustParseAddr("10.0.0.2"): "node n2"},
			want:   []want{{addrs: []string{"10.0.0.1", "10.0.0.3"}, ids: []int{1, 2}}},
		},
		{
			name:   "an address outside a shrunk pool is displaced",
			claims: []Claim{{Key: "a", Count: 1, Held: addrs("10.0.1.9"), HeldIDs: []int{3}}},
			want:   []want{{addrs: []string{"10.0.0.1"}, ids: []int{1}, displaced: []string{"10.0.1.9"}}},
		},
		{
			name:   "count lowered: the first held addresses stay, the rest are released",
			claims: []Claim{{Key: "a", Count: 1, Held: addrs("10.0.0.5", "10.0.0.6"), HeldIDs: []int{4, 5}}},
			want:   []want{{addrs: []string{"10.0.0.5"}, ids: []int{4}, displaced: []string{"10.0.0.6"}}},
		},
		{
			name: "exhausted: the claim keeps what it got and is told; the others are untouched",
			claims: []Claim{
				{Key: "big", Count: 5, Held: addrs("10.0.0.1"), HeldIDs: []int{1}},
				{Key: "holder", Count: 2, Held: addrs("10.0.0.5", "10.0.0.6"), HeldIDs: []int{2, 3}},
			},
			want: []want{
				{addrs: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, ids: []int{1, 4, 5, 6}, exhausted: "big wants 5 VIPs, got 4"},
				{addrs: []string{"10.0.0.5", "10.0.0.6"}, ids: []int{2, 3}},
			},
		},
		{
			name:   "router IDs come from the claim's range, lowest free first",
			claims: []Claim{{Key: "a", Count: 2, IDs: IDRange{10, 12}}, {Key: "b", Count: 1, IDs: IDRange{10, 12}}},
			want:   []want{{addrs: []string{"10.0.0.1", "10.0.0.2"}, ids: []int{10, 11}}, {addrs: []string{"10.0.0.3"}, ids: []int{12}}},
		},
		{
			name:   "a held ID outside a narrowed range is replaced, the address kept",
			claims: []Claim{{Key: "a", Count: 1, Held: addrs("10.0.0.2"), HeldIDs: []int{1}, IDs: IDRange{20, 30}}},
			want:   []want{{addrs: []string{"10.0.0.2"}, ids: []int{20}}},
		},
		{
			name: "a range used up: the claim is told and keeps what it has; no ID is taken from another",
			claims: []Claim{
				{Key: "a", Count: 1, Held: addrs("10.0.0.1"), HeldIDs: []int{10}, IDs: IDRange{10, 11}},
				{Key: "b", Count: 2, IDs: IDRange{10, 11}},
			},
			want: []want{
				{addrs: []string{"10.0.0.1"}, ids: []int{10}},
				{addrs: []string{"10.0.0.2"}, ids: []int{11}, exhausted: "every VRRP router ID of its range 10-11 is in use"},
			},
		},
		{
			name: "claims with different ranges still never share an ID",
			claims: []Claim{
				{Key: "a", Count: 1, Held: addrs("10.0.0.1"), HeldIDs: []int{5}, IDs: IDRange{1, 5}},
				{Key: "b", Count: 1, Held: addrs("10.0.0.2"), HeldIDs: []int{5}, IDs: IDRange{5, 6}},
			},
			want: []want{{addrs: []string{"10.0.0.1"}, ids: []int{5}}, {addrs: []string{"10.0.0.2"}, ids: []int{6}}},
		},
		{
			name:   "an invalid held ID is replaced, the address kept",
			claims: []Claim{{Key: "a", Count: 1, Held: addrs("10.0.0.2"), HeldIDs: []int{300}}},
			want:   []want{{addrs: []string{"10.0.0.2"}, ids: []int{1}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claims := slices.Clone(tt.claims)
			for i := range claims {
				claims[i].Pool = pool
			}
			got := Allocate(claims, tt.inUse)
			for i, w := range tt.want {
				g := got[i]
				if s := fmt.Sprint(g.Addresses); s != fmt.Sprint(addrs(w.addrs...)) {
					t.Errorf("%s: addresses %s, want %v", tt.claims[i].Key, s, w.addrs)
				}
				if !slices.Equal(g.RouterIDs, w.ids) {
					t.Errorf("%s: router IDs %v, want %v", tt.claims[i].Key, g.RouterIDs, w.ids)
				}
				if fmt.Sprint(g.Displaced) != fmt.Sprint(addrs(w.displaced...)) {
					t.Errorf("%s: displaced %v, want %v", tt.claims[i].Key, g.Displaced, w.displaced)
				}
				if (g.Exhausted == nil) != (w.exhausted == "") || g.Exhausted != nil && !strings.Contains(g.Exhausted.Error(), w.exhausted) {
					t.Errorf("%s: exhausted %v, want %q", tt.claims[i].Key, g.Exhausted, w.exhausted)
				}
			}
		})
	}
}

// TestAllocateNeverGivesAnAddressTwice: whatever claims hold (duplicates, foreign, stale), no
// address or router ID is granted to two claims.
func TestAllocateNeverGivesAnAddressTwice(t *testing.T) {
	pool, _ := ParsePool([]string{"10.0.0.0/28"})
	all := addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.99")
	for seed := range 200 {
		var claims []Claim
		for i := range 5 {
			c := Claim{Key: fmt.Sprint(i), Pool: pool, Count: 1 + (seed+i)%3}
			for j := range (seed * (i + 1)) % 3 {
				c.Held = append(c.Held, all[(seed+i+j)%len(all)])
				c.HeldIDs = append(c.HeldIDs, 1+(seed+j)%4)
			}
			claims = append(claims, c)
		}
		seenA, seenID := map[netip.Addr]string{}, map[int]string{}
		for i, g := range Allocate(claims, nil) {
			if len(g.Addresses) != len(g.RouterIDs) {
				t.Fatalf("seed %d: %d addresses, %d IDs", seed, len(g.Addresses), len(g.RouterIDs))
			}
			for j, a := range g.Addresses {
				if o, dup := seenA[a]; dup || !pool.Contains(a) {
					t.Fatalf("seed %d: %s granted to %s and %s (or outside the pool)", seed, a, o, claims[i].Key)
				}
				if o, dup := seenID[g.RouterIDs[j]]; dup {
					t.Fatalf("seed %d: router ID %d granted to %s and %s", seed, g.RouterIDs[j], o, claims[i].Key)
				}
				seenA[a], seenID[g.RouterIDs[j]] = claims[i].Key, claims[i].Key
			}
		}
	}
}

func TestHomes(t *testing.T) {
	inst := func(holders ...string) []Instance {
		out := make([]Instance, len(holders))
		for i, h := range holders {
			out[i] = Instance{Home: h}
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		holders []string
		nodes   []string
		want    []string
	}{
		{"new VIPs spread by name", []string{"", ""}, []string{"n1", "n2"}, []string{"n1", "n2"}},
		{"recorded homes stay", []string{"n2", "n1"}, []string{"n1", "n2"}, []string{"n2", "n1"}},
		{"one node was home of both while alone: the second gets one", []string{"n1", "n1"}, []string{"n1", "n2"}, []string{"n1", "n2"}},
		{"a node leaves, one joins: the VIP that stayed keeps its home", []string{"n2", "n2"}, []string{"n1", "n2"}, []string{"n2", "n1"}},
		{"the home is gone: fewest homes", []string{"n9", "n2"}, []string{"n2", "n3"}, []string{"n3", "n2"}},
		{"three VIPs on two nodes", []string{"", "", ""}, []string{"a", "b"}, []string{"a", "b", "a"}},
		{"no nodes", []string{"n1"}, nil, []string{""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Homes(inst(tt.holders...), tt.nodes); !slices.Equal(got, tt.want) {
				t.Fatalf("homes %v, want %v", got, tt.want)
			}
		})
	}
}
