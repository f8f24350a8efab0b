package vip

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttackAlertsPlanProblemHidesSplitBrain: VIPsAvailable's reason is the FIRST problem, and the
// reconciler (pkg/controller/vips) passes the plan's problems before FillHolders' DuplicateHolder.
// ShardgateVIPHeldTwice (critical, 1m) and ShardgateVIPNotHeld (critical, 2m) match only reasons
// DuplicateHolder / VIPsNotHeld. A cluster whose main shard's VIP is held by two nodes (split
// brain) while any other shard has a planning problem (a tenant's claimed VIP shard that finds the
// pool exhausted, the owner's node reporting a VIP address: NodeAddressConflict) is reported as
// PoolExhausted: only the warning ShardgateVIPsUnavailable fires, after 10 minutes, and its
// runbook says to widen the pool.
func TestAttackAlertsPlanProblemHidesSplitBrain(t *testing.T) {
	vips := []v1alpha1.ShardVIPs{{Shard: "default", Addresses: []v1alpha1.VIPAddress{{Address: "10.0.5.1", RouterID: 1}}}}
	planProblems := []Problem{{v1alpha1.ReasonPoolExhausted, "shard claim-t: pool 10.0.5.0/30 exhausted"}}
	split := []Problem{{v1alpha1.ReasonDuplicateHolder, "shard default: VIP 10.0.5.1 is held by n1 and n2 at once"}}
	c := Available(vips, append(planProblems, split...))
	if c.Reason != v1alpha1.ReasonDuplicateHolder {
		t.Errorf("VIPsAvailable reason %s for a split brain of the default shard: ShardgateVIPHeldTwice (critical) stays silent", c.Reason)
	}
}
