package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview31AnnotationRefusalSeesTheTrimmedCache (review31 finding, attacker T; High): the new
// refusal of routes carrying an annotation HAProxy reads as shared configuration
// (Shard.ReadsAnnotations, readAnnotation) reads Route.Annotations, which collectRoutes takes from
// the user-cluster cache. The real cache trims every Ingress (routekinds trimIngress) to
// Shardgate's allocation annotations and ingress.class keys: `haproxy.org/route-acl`,
// `example.com/timeout-server` and the rest never reach the planner. The unit test
// (TestShardFlavourChangedUnderItsRoutes) hands the planner the names directly and the e2e has no
// such route, so the refusal passes tests and is dead in production: after the flavour change a
// Traefik-era Ingress with `haproxy.org/route-acl` (spliced into the shared frontend: every host to
// the tenant's pods) stays on the now-HAProxy shard.
//
// Expected: an Ingress held on heavy carrying route-acl, read through the cache transform the
// controller really uses, is refused there.
func TestReview31AnnotationRefusalSeesTheTrimmedCache(t *testing.T) {
	live := heldOnHeavy("team", "grab", "grab")
	live.Annotations["haproxy.org/route-acl"] = "hdr(host) -m reg .*"
	cached := routekinds.Ingress{}.Cached()[0].Transform
	trimmed, err := cached(live.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	specs := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})
	spec := &v1alpha1.ClusterIngressSpec{Shards: specs}
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, trimmed.(*networkingv1.Ingress))
	_, routes, _, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(), spec, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := allocShards(context.Background(), user.Client, specs, "c1.z.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := allocation.StrategyFor("")
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, routes) {
		if a.Name == "grab" && !a.Rejected {
			t.Errorf("team/grab carries haproxy.org/route-acl yet stays on shard %s (route class %q): the cache "+
				"trimmed the annotation away before readAnnotation looked (planner saw %v)", a.Shard, a.RouteClass, routes[0].Annotations)
		}
	}
}
