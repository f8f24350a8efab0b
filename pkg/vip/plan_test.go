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
		return ShardRequest{Shard: "edge", Pool: pool, FromCluster: true, Count: 1}
	}
	for _, tt := range []struct {
		name     string
		clusters []ClusterRequest
		inUse    map[netip.Addr]string
		want     []string
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
			name: "a cluster pool overlapping an older cluster's: nothing new, the older one untouched",
			clusters: []ClusterRequest{
				{Key: "ns/old", Shards: []ShardRequest{own("10.0.2.0/29")}},
				{Key: "ns/new", Shards: []ShardRequest{own("10.0.2.4-10.0.2.9")}},
			},
			want: []string{"edge=10.0.2.1#1", "PoolOverlap"},
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
			inUse: map[netip.Addr]string{netip.MustParseAddr("10.0.4.1"): "node n1 of ns/a"},
			want:  []string{"edge=10.0.4.2#1 AddressInUse PoolExhausted"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.clusters, tt.inUse)
			for i, w := range tt.want {
				if s := summary(got[i]); s != w {
					t.Errorf("%s: %s, want %s (problems %+v)", tt.clusters[i].Key, s, w, got[i].Problems)
				}
			}
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
	c := Available(held, []Problem{{v1alpha1.ReasonPoolExhausted, "shard edge: pool exhausted"}, {v1alpha1.ReasonAddressInUse, "shard edge: VIP 10.0.0.9 given up"}})
	if c.Status != "False" || c.Reason != v1alpha1.ReasonPoolExhausted || !strings.Contains(c.Message, "10.0.0.9") {
		t.Fatalf("problems: %+v", c)
	}
}
