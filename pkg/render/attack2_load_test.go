package render

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttack2LoadFollowedScaleIgnoresSpreadOffHostNetwork: a shard that follows load up to 2 or
// more spreads (spreads): its routers carry a *required* anti-affinity on the node's hostname,
// whatever its publishing, so at most one router runs per node. FollowedScale bounds the replicas
// by the eligible nodes on the host network only: a NodePort (or LoadBalancer) shard with
// maxReplicas 10 in a 3-node cluster is scaled to 10, and 7 routers stay Pending for good (which
// Replicas then counts as serving: see routerload's TestAttack2LoadScaleUpCountsRoutersNotYetServing).
func TestAttack2LoadFollowedScaleIgnoresSpreadOffHostNetwork(t *testing.T) {
	for _, p := range []v1alpha1.Publishing{v1alpha1.PublishNodePort, v1alpha1.PublishLoadBalancer} {
		s := v1alpha1.ShardSpec{Name: "default", Publishing: p, Replicas: ptr.To[int32](2),
			Load: &v1alpha1.ShardLoadSpec{MaxReplicas: ptr.To[int32](10)}}
		if !spreads(s) {
			t.Fatalf("%s: setup: the shard does not spread", p)
		}
		if sc := FollowedScale(s, 2, 0, 3, nil); sc.Eligible != 3 {
			t.Errorf("%s shard, one router per node (required anti-affinity), 3 eligible nodes: bound %d (0: unbounded), max %d",
				p, sc.Eligible, sc.Max)
		}
	}
}
