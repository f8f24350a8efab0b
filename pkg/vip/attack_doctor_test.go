package vip

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// A cluster whose nodes cannot be read (unreachable: O stops its API server, or any outage) is
// frozen: Plan keeps its VIPs with no holder, and the reconciler's fillHolders returns before
// FillHolders (pkg/controller/vips: !cluster.Observable()), so nobody vouches for a holder. The
// old ranking said NodesNotObserved (warning, 10m); the new one says VIPsNotHeld, "keepalived is
// not running there yet": ShardgateVIPNotHeld (critical, 2m) pages for every unreachable cluster
// with a VIP shard, while its routers most likely still hold the VIPs, and doctor sends the
// operator to check VRRP between nodes it cannot even see.
func TestAttackDoctorUnreachableClusterPagesVIPNotHeld(t *testing.T) {
	held := []v1alpha1.ShardVIPs{{Shard: "edge", Pool: "10.0.0.0/29",
		Addresses: []v1alpha1.VIPAddress{{Address: "10.0.0.1", RouterID: 1, Holder: "n1"}}}}
	plans := Plan([]ClusterRequest{{Key: "a/c", Held: held,
		Frozen: "waiting to read the cluster's nodes before allocating VIPs (see ClusterReachable)",
		Shards: []ShardRequest{{Shard: "edge", Pool: []string{"10.0.0.0/29"}, Count: 1}}}}, nil)
	c := Available(plans[0].VIPs, plans[0].Problems) // fillHolders: nil for an unobservable cluster
	if c.Reason == v1alpha1.ReasonVIPsNotHeld {
		t.Errorf("an unobservable cluster's VIPs are reported not held (critical page): %s %q", c.Reason, c.Message)
	}
}

// A VIP two nodes hold gets no holder (FillHolders), so it is also listed as "no node holds ...:
// keepalived is not running there yet" next to "held by n1 and n2 at once": the message doctor
// prints contradicts itself about the VIP in a split brain.
func TestAttackDoctorSplitVIPAlsoToldUnheld(t *testing.T) {
	vips := []v1alpha1.ShardVIPs{{Shard: "edge", Addresses: []v1alpha1.VIPAddress{{Address: "10.0.0.1", RouterID: 1}}}}
	split := FillHolders(vips, map[string]map[netip.Addr][]string{"edge": {netip.MustParseAddr("10.0.0.1"): {"n1", "n2"}}})
	c := Available(vips, split)
	if c.Reason != v1alpha1.ReasonDuplicateHolder || strings.Contains(c.Message, "no node holds 10.0.0.1") {
		t.Errorf("split brain: %s %q", c.Reason, c.Message)
	}
}
