package allocation

import (
	"context"
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

// TestReview31bConfigMapOnlyAnnotationsRefuseRoutes (review31b; the operator at 3 a.m., and T/O
// who lose a route for nothing): haproxyRouteAnnotations also lists the names haproxytech's
// controller v1.11.12 reads only from its own ConfigMap (pkg/controller/global.go and
// pkg/handler/*.go read them from k.ConfigMaps.Main.Annotations only: timeout-client,
// timeout-connect, maxconn, log-format, proxy-protocol, tls-alpn, client-ca, ssl-certificate, ...);
// "which costs tenants nothing" at admission, where only new ones are refused. Allocation now
// refuses a route carrying one of them, and says the routers read it as shared configuration, which
// is false: an Ingress migrated from jcmoraisjr/haproxy-ingress (whose Ingress keys are
// ingress.kubernetes.io/timeout-client etc.) that has been served on an HAProxy shard, or is bound
// by a claim, loses its route and DNS on upgrade with a wrong reason.
// Expected: annotations the routers never read from a route (or its Services) do not refuse it.
func TestReview31bConfigMapOnlyAnnotationsRefuseRoutes(t *testing.T) {
	class := render.HAProxy{}.IngressClass().Name
	transform := routekinds.Ingress{}.Cached()[0].Transform
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	keys := []string{"ingress.kubernetes.io/timeout-client", "example.com/maxconn", "example.com/log-format",
		"ingress.kubernetes.io/proxy-protocol", "example.com/tls-alpn"}
	for i, k := range keys {
		ing := ingress("team", "r"+string(rune('a'+i)), class, "")
		ing.Annotations = map[string]string{k: "1"}
		trimmed, err := transform(ing)
		if err != nil {
			t.Fatal(err)
		}
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
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s},
		shards, routes) {
		if a.Rejected || a.Shard != "heavy" {
			t.Errorf("team/%s: %+v, want allocated to heavy: its routers read that annotation from their ConfigMap only", a.Name, a)
		}
	}
}
