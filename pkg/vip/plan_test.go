package vip

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func vips(shard string, pairs ...any) v1alpha1.ShardVIPs {
	v := v1alpha1.ShardVIPs{Shard: shard}
	for i := 0; i < len(pairs); i += 2 {
		v.Addresses = append(v.Addresses, v1alpha1.VIPAddress{Address: pairs[i].(string), RouterID: int32(pairs[i+1].(int))})
	}
	return v
}

func summary(p ClusterPlan) string {
	var parts []string
	for _, v := range p.VIPs {
		var as []string
		for _, a := range v.Addresses {
			as = append(as, fmt.Sprintf("%s#%d", a.Address, a.RouterID))
		}
		parts = append(parts, v.Shard+"="+strings.Join(as, ","))
	}
	for _, pr := range p.Problems {
		parts = append(parts, pr.Reason)
	}
	return strings.Join(parts, " ")
}

func TestPlan(t *testing.T) {
	own := func(pool ...string) ShardRequest {
		return ShardRequest{Shard: "edge", Pool: pool, Count: 1}
	}
	for _, tt := range []struct {
		name     string
		clusters []ClusterRequest
		nodes    map[netip.Addr][]NodeAddress
		want     []string
		// inMessage: the first cluster with a problem says this (when set).
		inMessage string
	}{
		{
			name: "two clusters share a profile pool: distinct VIPs and router IDs",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 2}}},
				{Key: "ns/b", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 1}}},
			},
			want: []string{"edge=10.0.0.1#1,10.0.0.2#2", "edge=10.0.0.3#3"},
		},
		{
			name: "what a cluster holds stays, even when a newer cluster is listed first",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{own("10.0.1.0/29")}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.1.5", 9)}},
			},
			want: []string{"edge=10.0.1.5#9"},
		},
		{
			name: "overlapping pools of two profiles in one domain: shared address by address, oldest first",
			clusters: []ClusterRequest{
				{Key: "ns/older", Shards: []ShardRequest{own("10.0.2.4-10.0.2.9")}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.2.4", 1)}},
				{Key: "ns/newer", Shards: []ShardRequest{own("10.0.2.0/29")}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.2.4", 1)}},
			},
			want: []string{"edge=10.0.2.4#1", "edge=10.0.2.1#2 AddressInUse"},
		},
		{
			name: "router IDs from the cluster's range; a range used up is told, nothing taken from another",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{own("10.0.9.0/29")}, RouterIDs: IDRange{10, 10}},
				{Key: "ns/b", Shards: []ShardRequest{own("10.0.9.0/29")}, RouterIDs: IDRange{10, 10}},
				{Key: "ns/c", Shards: []ShardRequest{own("10.0.9.0/29")}, RouterIDs: IDRange{9, 11}},
			},
			want:      []string{"edge=10.0.9.1#10", "edge= RouterIDsExhausted", "edge=10.0.9.2#9"},
			inMessage: "every VRRP router ID of its range 10-10 is in use",
		},
		{
			name: "an unparsable pool keeps what the shard holds, reserved from others",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{own("garbage")}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.3.1", 1)}},
				{Key: "ns/b", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.3.0/30"}, Count: 1}}},
			},
			want: []string{"edge=10.0.3.1#1 InvalidPool", "edge=10.0.3.2#2"},
		},
		{
			name:     "no pool anywhere",
			clusters: []ClusterRequest{{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Count: 1}}}},
			want:     []string{"NoPool"},
		},
		{
			name: "exhausted and in use: told, with what could be given",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.4.0/30"}, Count: 2}}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.4.1", 1)}},
			},
			nodes:     map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.4.2"): {{"ns/a", "n1"}}},
			want:      []string{"edge=10.0.4.1#1 PoolExhausted"},
			inMessage: "wants 2 VIPs, got 1 (in use: 10.0.4.2 by node n1 of ns/a)",
		},
		// Node addresses are written by each cluster's owner: they never take a held VIP away.
		{
			name: "a newer cluster's node reports an older cluster's VIP: the VIP stays, the newer cluster is told",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.5.0/29"}, Count: 1}}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.5.1", 1)}},
				{Key: "ns/b", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.5.0/29"}, Count: 1}}},
			},
			nodes:     map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.5.1"): {{"ns/b", "n9"}}},
			want:      []string{"edge=10.0.5.1#1", "edge=10.0.5.2#2 NodeAddressConflict"},
			inMessage: "node n9 of ns/b reports 10.0.5.1, a VIP of ns/a (shard edge)",
		},
		{
			name: "an older cluster's node reports a newer cluster's VIP: the VIP stays too, the older cluster is told",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.7.0/29"}, Count: 1}}},
				{Key: "ns/b", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.7.0/29"}, Count: 1}}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.7.2", 2)}},
			},
			nodes: map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.7.2"): {{"ns/a", "n1"}}},
			want:  []string{"edge=10.0.7.1#1 NodeAddressConflict", "edge=10.0.7.2#2"},
		},
		{
			name: "a cluster's own VIP on its own node (a CPI reporting every NIC address) is no conflict",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.6.0/29"}, Count: 1}}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.6.1", 1)}},
			},
			nodes: map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.6.1"): {{"ns/a", "n1"}}},
			want:  []string{"edge=10.0.6.1#1"},
		},
		{
			name: "the holder's own node and another cluster's report one VIP: the other cluster is still told",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.6.0/29"}, Count: 1}}, Held: []v1alpha1.ShardVIPs{vips("edge", "10.0.6.1", 1)}},
				{Key: "ns/b", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.6.0/29"}, Count: 1}}},
			},
			nodes: map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.6.1"): {{"ns/a", "n1"}, {"ns/b", "m1"}, {"ns/b", "m2"}}},
			want:  []string{"edge=10.0.6.1#1", "edge=10.0.6.2#2 NodeAddressConflict"},
		},
		{
			name: "a node address is never given as a new VIP",
			clusters: []ClusterRequest{
				{Key: "ns/a", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.8.0/29"}, Count: 1}}},
			},
			nodes: map[netip.Addr][]NodeAddress{netip.MustParseAddr("10.0.8.1"): {{"ns/a", "n1"}}},
			want:  []string{"edge=10.0.8.2#1"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.clusters, tt.nodes)
			for i, w := range tt.want {
				if s := summary(got[i]); s != w {
					t.Errorf("%s: %s, want %s (problems %+v)", tt.clusters[i].Key, s, w, got[i].Problems)
				}
			}
			if tt.inMessage == "" {
				return
			}
			for _, p := range got {
				if len(p.Problems) > 0 {
					if !strings.Contains(p.Problems[0].Message, tt.inMessage) {
						t.Errorf("message %q, want it to say %q", p.Problems[0].Message, tt.inMessage)
					}
					return
				}
			}
			t.Errorf("no problem, want one saying %q", tt.inMessage)
		})
	}
}

func TestAvailable(t *testing.T) {
	held := []v1alpha1.ShardVIPs{{Shard: "edge", Addresses: []v1alpha1.VIPAddress{{Address: "10.0.0.1", RouterID: 1, Holder: "n1"}, {Address: "10.0.0.2", RouterID: 2, Holder: "n2"}}}}
	if c := Available(held, nil); c.Status != "True" || c.Message != "10.0.0.1 on n1, 10.0.0.2 on n2" {
		t.Fatalf("held: %+v", c)
	}
	held[0].Addresses[1].Holder = ""
	if c := Available(held, nil); c.Status != "False" || c.Reason != v1alpha1.ReasonVIPsNotHeld || !strings.Contains(c.Message, "10.0.0.2 (shard edge)") {
		t.Fatalf("one not held: %+v", c)
	}
	problems := []Problem{{v1alpha1.ReasonPoolExhausted, "shard edge: pool exhausted"}, {v1alpha1.ReasonAddressInUse, "shard edge: VIP 10.0.0.9 given up"}}
	// A VIP in DNS that reaches nothing is graver than a planning problem: it is the reason (the
	// alert that pages reads it), and every message stays.
	c := Available(held, problems)
	if c.Status != "False" || c.Reason != v1alpha1.ReasonVIPsNotHeld || !strings.Contains(c.Message, "10.0.0.9") ||
		!strings.Contains(c.Message, "10.0.0.2 (shard edge)") {
		t.Fatalf("problems and one not held: %+v", c)
	}
	held[0].Addresses[1].Holder = "n2"
	if c := Available(held, problems); c.Status != "False" || c.Reason != v1alpha1.ReasonPoolExhausted || !strings.Contains(c.Message, "10.0.0.9") {
		t.Fatalf("problems: %+v", c)
	}
}
