package allocation

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// planThroughCache plans the Ingresses of namespace team as the controller sees them: through
// the cache transform it really uses (which trims annotations), in a cluster with a default
// Traefik shard and shard heavy of HAProxy routers. It returns each Ingress' allocation by name,
// and the trimmed Ingresses.
func planThroughCache(t *testing.T, ings ...*networkingv1.Ingress) (map[string]allocation.Allocation, []*networkingv1.Ingress) {
	t.Helper()
	transform := routekinds.Ingress{}.Cached()[0].Transform
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	var cached []*networkingv1.Ingress
	for _, ing := range ings {
		trimmed, err := transform(ing.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, trimmed.(*networkingv1.Ingress))
		objs = append(objs, trimmed.(*networkingv1.Ingress))
	}
	specs := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"}, objs...)
	_, routes, _, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(),
		&v1alpha1.ClusterIngressSpec{Shards: specs}, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := allocShards(context.Background(), user.Client, specs, "c1.z.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := allocation.StrategyFor("")
	got := map[string]allocation.Allocation{}
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s},
		shards, routes) {
		got[a.Name] = a
	}
	return got, cached
}

// TestPlantedSharedConfigAnnotationsAreRefused (review31, tenant T): while the cluster had no
// HAProxy shard, no admission policy kept HAProxy's annotations out, and an Ingress naming
// HAProxy's class waited, rejected, with `haproxy.org/route-acl` (spliced into the shared
// frontend's rules: every host to T's pods). Once the operator adds an HAProxy shard, allocation
// refuses it there with the annotation named, read through the cache transform the controller
// really uses (which trims every other annotation); the same Ingress without it is allocated, and
// an annotation no router reads changes nothing.
func TestPlantedSharedConfigAnnotationsAreRefused(t *testing.T) {
	class := render.HAProxy{}.IngressClass().Name
	planted := ingress("team", "grab", class, "")
	planted.Annotations = map[string]string{"haproxy.org/route-acl": "hdr(host) -m reg .*", "example.com/note": "x"}
	plain := ingress("team", "plain", class, "")
	plain.Annotations = map[string]string{"example.com/note": "x"}
	got, cached := planThroughCache(t, planted, plain)
	if _, ok := cached[0].Annotations["example.com/note"]; ok {
		t.Errorf("the cache kept an annotation no router reads: %v", cached[0].Annotations)
	}
	if a := got["grab"]; !a.Rejected ||
		!strings.Contains(a.Reason, "read annotation haproxy.org/route-acl as configuration every tenant's routes share") {
		t.Errorf("team/grab with haproxy.org/route-acl: %+v, want refused naming the annotation", a)
	}
	if a := got["plain"]; a.Rejected || a.Shard != "heavy" {
		t.Errorf("team/plain: %+v, want allocated to heavy", a)
	}
}
