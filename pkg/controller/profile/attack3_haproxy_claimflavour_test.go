package profile

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestAttack3ClaimedShardFlavourFlipsOnReorder: a claimed shard's flavour is the profile's FIRST
// shard's (ClusterIngress.Shards, ClaimedShard), and ClusterIngress spec.shards keeps the
// profile's order (sources: ResolveShards). The fixed-flavour rule correlates profile shards by
// name only, so the operator reordering the list (or removing the first shard) is accepted, and
// every claimed shard of every selected cluster changes flavour in place, traefik to haproxy: the
// change the rule exists to refuse (the claim's routes dropped while the new routers start).
func TestAttack3ClaimedShardFlavourFlipsOnReorder(t *testing.T) {
	seed := controllertest.Seed(t)
	ctx := context.Background()
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "attack3-claim-"},
		Spec: v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: "default", Flavour: "traefik"},
			{Name: "heavy", Flavour: "haproxy"}}}}
	if err := seed.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, p) })
	claimed := func() v1alpha1.Flavour {
		ci := &v1alpha1.ClusterIngress{Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards(p.Spec.Shards)},
			Status: v1alpha1.ClusterIngressStatus{Claims: []v1alpha1.ClaimRecord{{Namespace: "team", Name: "mine",
				Shard: "claim-team"}}}}
		s := ci.Shards()
		return s[len(s)-1].Flavour
	}
	before := claimed()
	p.Spec.Shards = []v1alpha1.ShardSpec{p.Spec.Shards[1], p.Spec.Shards[0]}
	if err := seed.Client.Update(ctx, p); err != nil {
		t.Logf("reorder refused: %v", err)
		return
	}
	if after := claimed(); after != before {
		t.Errorf("the profile's shards reordered (accepted): claimed shard claim-team's flavour changes in place %s -> %s",
			before, after)
	}
}
