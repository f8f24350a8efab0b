package vip

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestFrozenKeepsHoldingsAndAsksNothingNew: a cluster whose nodes cannot be read keeps its VIPs
// (still reserved against younger clusters) and gets no new one, with the reason.
func TestFrozenKeepsHoldingsAndAsksNothingNew(t *testing.T) {
	held := []v1alpha1.ShardVIPs{{Shard: "edge", Pool: "10.0.0.0/29", Addresses: []v1alpha1.VIPAddress{{Address: "10.0.0.1", RouterID: 1}}}}
	clusters := []ClusterRequest{
		{Key: "a/old", Frozen: "nodes unknown", Held: held, Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 2}}},
		{Key: "b/new", Frozen: "nodes unknown", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 1}}},
		{Key: "c/newer", Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 1}}},
	}
	plans := Plan(clusters, nil)
	if got := plans[0].VIPs; len(got) != 1 || len(got[0].Addresses) != 1 || got[0].Addresses[0].Address != "10.0.0.1" {
		t.Errorf("frozen holder: %+v", got)
	}
	if len(plans[0].Problems) != 1 || plans[0].Problems[0].Reason != v1alpha1.ReasonNodesNotObserved {
		t.Errorf("frozen holder problems: %+v", plans[0].Problems)
	}
	if len(plans[1].VIPs) != 0 {
		t.Errorf("a frozen cluster got a new VIP: %+v", plans[1].VIPs)
	}
	if got := plans[2].VIPs; len(got) != 1 || len(got[0].Addresses) != 1 || got[0].Addresses[0].Address == "10.0.0.1" {
		t.Errorf("a frozen cluster's holding was given away: %+v", got)
	}
}
