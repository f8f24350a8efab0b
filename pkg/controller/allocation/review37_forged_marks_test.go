package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview37MarksForgedBeforeTheUpgradeTakeAHeldHost (review37 finding, fails on purpose): under
// the previous release grpcroutes were not among the admission policy's resources, so T could write
// Shardgate's marks on a GRPCRoute (shardgate.io/shard, allocation Allocated, hosts) by hand: nothing
// read them. T plants one, attached to the parent, for a host of interest; later namespace shop
// creates an HTTPRoute for that host and is allocated it (T's GRPCRoute is invisible). On the
// upgrade GRPCRoutes are planned, the forged marks count as a held claim (allocation.Held), and
// of two holders the older keeps the host: T's GRPCRoute takes shop's host, shop's HTTPRoute, which
// served it until then, is rejected. (The same after a role that forbade GRPCRoutes is fixed.)
func TestReview37MarksForgedBeforeTheUpgradeTakeAHeldHost(t *testing.T) {
	host := "shop.c1.z.test"
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	shardGW := gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
		Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: gatewayv1.ObjectName(names.ShardGatewayName("default"))}
	marks := func(m *metav1.ObjectMeta) {
		m.Labels = map[string]string{v1alpha1.ShardLabel: "default"}
		m.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated, v1alpha1.HostsAnnotation: host}
	}
	old := metav1.NewTime(time.Now().Add(-90 * 24 * time.Hour))
	planted := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "planted", UID: "planted", CreationTimestamp: old},
		Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}}}
	marks(&planted.ObjectMeta) // by hand, under the previous release: no policy covered grpcroutes
	victim := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "web",
		CreationTimestamp: metav1.NewTime(old.Add(24 * time.Hour))},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent, shardGW}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}}}
	marks(&victim.ObjectMeta) // by Shardgate: allocated and served for months
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Builtin(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, victim, planted)
	// The previous release planned the cluster's Ingresses and HTTPRoutes, and said so.
	ci := &v1alpha1.ClusterIngress{}
	must(t, r.Client.Get(context.Background(), key, ci))
	ci.Status.RouteKinds = []v1alpha1.RouteKindCount{{Kind: "Ingress"}, {Kind: "HTTPRoute", Routes: 1}}
	must(t, r.Client.Status().Update(context.Background(), ci))
	for range 3 {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	got := &gatewayv1.HTTPRoute{}
	must(t, u.Get(context.Background(), client.ObjectKeyFromObject(victim), got))
	gotPlanted := &gatewayv1.GRPCRoute{}
	must(t, u.Get(context.Background(), client.ObjectKeyFromObject(planted), gotPlanted))
	if got.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated {
		t.Errorf("after the upgrade shop's HTTPRoute, allocated %s for months, is %q (last parentRef %s); team's GRPCRoute with marks "+
			"written by hand before grpcroutes were guarded is %q on shard %q: a host taken by forged marks",
			host, got.Annotations[v1alpha1.AllocationAnnotation], got.Spec.ParentRefs[len(got.Spec.ParentRefs)-1].Name,
			gotPlanted.Annotations[v1alpha1.AllocationAnnotation], gotPlanted.Labels[v1alpha1.ShardLabel])
	}
}
