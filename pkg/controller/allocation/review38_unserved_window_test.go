package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview38AKindUnservedForOnePassMovesEveryLegitimateRoute (review38 finding, fails on
// purpose): distrustNewKinds takes "absent from the last pass' status.routeKinds" for "never
// guarded here". But a kind is also absent after any single pass during which the cluster did not
// serve it: since cc6026b one 403 on listing HTTPRoutes at an engagement's first contact (a role
// re-applied by delete+create by GitOps at 3 a.m., a kubeconfig rotation at that moment, an
// aggregated-discovery hiccup) leaves Gateway API unserved for at least RightsInterval, and that
// pass writes status.routeKinds without HTTPRoute. When the rights loop re-engages, the first
// pass forgets every HTTPRoute's shard and held hosts, long allocated by Shardgate itself under the
// admission policy, and plans them as new: by load, so they move shard, their default hosts change
// (<label>.<shard domain>) and a custom host's CNAME target changes (the tenant's DNS record now
// points at a shard whose routers no longer serve it). Nothing T or O did, no marks forged.
func TestReview38AKindUnservedForOnePassMovesEveryLegitimateRoute(t *testing.T) {
	ctx := context.Background()
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	t0 := time.Now().Add(-90 * 24 * time.Hour)
	at := func(d int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(d) * time.Hour)) }
	i1 := ingress("shop", "i1", names.IngressClassName, "")
	i1.CreationTimestamp, i1.UID = at(0), "i1"
	r1 := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r1", UID: "r1", CreationTimestamp: at(1)},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}}}}
	r2 := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r2", UID: "r2", CreationTimestamp: at(2)},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames: []gatewayv1.Hostname{"www.shop.example"}}}
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	r, key, u := newKindsReconciler(t, []v1alpha1.ShardSpec{{Name: "a"}, {Name: "b"}},
		v1alpha1.AllocationSettings{Strategy: v1alpha1.StrategyLeastRoutes}, kinds,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, i1, r1, r2)
	controllertest.Reconcile(t, r, key, 3)
	type held struct{ shard, hosts string }
	read := func(o client.Object) held {
		must(t, u.Get(ctx, client.ObjectKeyFromObject(o), o))
		return held{o.GetLabels()[v1alpha1.ShardLabel], o.GetAnnotations()[v1alpha1.HostsAnnotation]}
	}
	before := map[string]held{"r1": read(&gatewayv1.HTTPRoute{ObjectMeta: r1.ObjectMeta}),
		"r2": read(&gatewayv1.HTTPRoute{ObjectMeta: r2.ObjectMeta})}
	t.Logf("allocated: %v (Ingress i1 on %q)", before, read(&networkingv1.Ingress{ObjectMeta: i1.ObjectMeta}).shard)

	// One engagement where listing HTTPRoutes was refused (cc6026b: no Gateway API at all): the
	// cluster serves Ingresses alone for at least RightsInterval, and life goes on: a new Ingress.
	access := r.Access.(*clusteraccess.Fake)
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: routekinds.Registry{routekinds.Ingress{}}})
	i2 := ingress("shop", "i2", names.IngressClassName, "")
	i2.CreationTimestamp = at(3)
	must(t, u.Create(ctx, i2))
	controllertest.Reconcile(t, r, key, 2)

	// The rights loop re-engages 30 s later: HTTPRoutes are served again.
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: kinds})
	controllertest.Reconcile(t, r, key, 3)
	after := map[string]held{"r1": read(&gatewayv1.HTTPRoute{ObjectMeta: r1.ObjectMeta}),
		"r2": read(&gatewayv1.HTTPRoute{ObjectMeta: r2.ObjectMeta})}
	for name, b := range before {
		if a := after[name]; a != b {
			t.Errorf("HTTPRoute shop/%s, allocated by Shardgate on shard %q with hosts %q, is on shard %q with hosts %q after "+
				"one pass without HTTPRoutes: its default host or its custom host's CNAME target moved", name, b.shard, b.hosts,
				a.shard, a.hosts)
		}
	}
}
