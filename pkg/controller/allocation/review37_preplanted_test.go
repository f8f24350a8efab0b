package allocation

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview37GRPCRouteAttachedByHandBeforeTheUpgradeIsServed (review37 finding, fails on
// purpose; the host is under the cluster domain, so the shard listener *.c1.z.test matches it): the previous release installed the GRPCRoute CRD (gatewayapi.Kinds) but its admission
// policy covered httproutes only and its shard Gateways took HTTPRoutes only, so T could create a
// GRPCRoute attached directly to a shard's Gateway (shardgate-system/router-default), not to the
// parent, for a host another namespace holds: no listener took it, nothing refused it. After the
// upgrade the shard's listeners take GRPCRoutes (render.AllocatedRouteKinds), the policy now guards
// grpcroutes but only judges writes, never what already exists, and allocation leaves a route not
// attached to the parent alone (Serves false, no marks to release). So the planted GRPCRoute is
// served by the shard's routers for the victim's host, past allocation's hijack refusal. The same
// holds for a cluster whose role forbade GRPCRoutes (unserved: no guard) and is fixed later.
func TestReview37GRPCRouteAttachedByHandBeforeTheUpgradeIsServed(t *testing.T) {
	host := gatewayv1.Hostname("shop.c1.z.test")
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	shardGW := gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
		Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: gatewayv1.ObjectName(names.ShardGatewayName("default"))}
	victim := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "web"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames: []gatewayv1.Hostname{host}}}
	planted := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "planted", UID: "planted"},
		Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{shardGW}},
			Hostnames: []gatewayv1.Hostname{host}}}
	kinds := routekinds.Builtin() // the upgraded release's
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, kinds,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, victim, planted)
	for range 3 {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	gotVictim := &gatewayv1.HTTPRoute{}
	must(t, u.Get(context.Background(), client.ObjectKeyFromObject(victim), gotVictim))
	if gotVictim.Labels[v1alpha1.ShardLabel] != "default" {
		t.Fatalf("the victim's HTTPRoute is not allocated: %v", gotVictim.Labels)
	}
	got := &gatewayv1.GRPCRoute{}
	must(t, u.Get(context.Background(), client.ObjectKeyFromObject(planted), got))
	takesGRPC := slices.ContainsFunc(render.AllocatedRouteKinds(kinds), func(k gatewayv1.RouteGroupKind) bool { return k.Kind == "GRPCRoute" })
	if takesGRPC && slices.ContainsFunc(got.Spec.ParentRefs, func(p gatewayv1.ParentReference) bool { return p.Name == shardGW.Name }) {
		t.Errorf("after the upgrade, team's GRPCRoute planted on shard Gateway %s for host %s (held by namespace shop) keeps "+
			"that parentRef, and the shard's listeners now take GRPCRoutes: its routers serve it past allocation; "+
			"want it detached (or refused) before the listeners take the kind", shardGW.Name, host)
	}
}
