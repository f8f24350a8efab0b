package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
)

// TestAttackClaimedShardIgnoresTheProfilesFlavour (review finding: claimed shards are always
// Traefik): the profile runs only the other flavour, whose class is the cluster's default. A tenant's
// IngressClaim is provisioned as a Traefik shard anyway (v1alpha1.ClaimedShard names
// FlavourTraefik, though its comment says "of the profile's flavour" and development.md says
// nothing outside pkg/render names a flavour): the claim brings Traefik's routers, its class and
// its ClusterRole (every Secret of the cluster) into a cluster whose operator chose another
// flavour, and the very Ingresses the claim binds, classless or naming the cluster's class, are
// refused.
func TestAttackClaimedShardIgnoresTheProfilesFlavour(t *testing.T) {
	flavourtest.Use(t)
	ctx := context.Background()
	ci := &v1alpha1.ClusterIngress{
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: flavourtest.Name}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", Claims: []v1alpha1.ClaimRecord{{Namespace: "team", Name: "mine",
			Shard: "mine-team", Replicas: 1, Ingresses: []string{"web", "named"}, Phase: v1alpha1.ClaimBound}}},
	}
	specs := ci.Shards()
	for _, s := range specs {
		if s.Flavour != flavourtest.Name {
			t.Errorf("shard %s (claim %q) runs %s routers; the profile's are %s", s.Name, s.Claim, s.Flavour, flavourtest.Name)
		}
	}

	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		ingress("team", "web", "", ""), ingress("team", "named", flavourtest.Class, ""))
	_, routes, _, err := collectRoutes(ctx, user.Client, user.RouteKinds(), &ci.Spec, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	pins := claimPins(ci, user.RouteKinds())
	for i := range routes {
		routes[i].Pin = pins[routeKey(routes[i].Kind, routes[i].Namespace, routes[i].Name)]
	}
	shards, err := allocShards(ctx, user.Client, specs, ci.Status.Domain, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := allocation.StrategyFor("")
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, routes) {
		if a.Rejected || a.Shard != "mine-team" {
			t.Errorf("Ingress %s/%s the claim binds: shard %q, rejected: %s", a.Namespace, a.Name, a.Shard, a.Reason)
		}
	}
}
