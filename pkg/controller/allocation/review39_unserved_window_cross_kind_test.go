package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview39UnservedWindowCrossKindHijack (review39 finding, fails on purpose): plannedKinds
// keeps HTTPRoute marks trusted across a window in which HTTPRoutes are not served, but the
// window itself still hands their held hosts away: the pass during the window sees no HTTPRoute,
// so T's Ingress (a year old, edited to shop's host and refused until then) is allocated the host
// and Shardgate writes it held marks. When HTTPRoutes are served again both routes hold the host
// and "the older keeps it": T's Ingress. shop's HTTPRoute, allocated for months, is rejected. Same
// attack as review38's, across kinds; only namespace edit and a window (transient 403 on
// HTTPRoutes at first contact, ≥ RightsInterval now; Gateway API off and on) are needed.
func TestReview39UnservedWindowCrossKindHijack(t *testing.T) {
	ctx := context.Background()
	host := "pay.shop.example"
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	t0 := time.Now().Add(-365 * 24 * time.Hour)
	tenant := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "old", UID: "team-old",
		CreationTimestamp: metav1.NewTime(t0)}, Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(names.IngressClassName),
		Rules: []networkingv1.IngressRule{{Host: "team.example"}}}}
	shop := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pay", UID: types.UID("shop-pay"),
		CreationTimestamp: metav1.NewTime(t0.Add(30 * 24 * time.Hour))},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}}}
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, kinds,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		tenant, shop)
	controllertest.Reconcile(t, r, key, 3)
	// T edits its year-old Ingress to shop's host: refused, shop's HTTPRoute holds it.
	got := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKeyFromObject(tenant), got))
	got.Spec.Rules[0].Host = host
	must(t, u.Update(ctx, got))
	controllertest.Reconcile(t, r, key, 3)
	ingState := func() string {
		x := &networkingv1.Ingress{}
		must(t, u.Get(ctx, client.ObjectKeyFromObject(tenant), x))
		return x.Annotations[v1alpha1.AllocationAnnotation] + " " + x.Annotations[v1alpha1.HostsAnnotation]
	}
	routeState := func() string {
		x := &gatewayv1.HTTPRoute{}
		must(t, u.Get(ctx, client.ObjectKeyFromObject(shop), x))
		return x.Annotations[v1alpha1.AllocationAnnotation] + " " + x.Annotations[v1alpha1.HostsAnnotation]
	}
	before := routeState()
	if before != v1alpha1.AllocationAllocated+" "+host {
		t.Fatalf("precondition: shop's HTTPRoute is %q", before)
	}
	if s := ingState(); s == v1alpha1.AllocationAllocated+" "+host {
		t.Fatalf("precondition: T's Ingress edited to shop's held host is %q", s)
	}

	// One pass while HTTPRoutes are not served, then they are again.
	access := r.Access.(*clusteraccess.Fake)
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: routekinds.Registry{routekinds.Ingress{}}})
	controllertest.Reconcile(t, r, key, 1)
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: kinds})
	controllertest.Reconcile(t, r, key, 3)
	if after := routeState(); after != before {
		t.Errorf("shop's HTTPRoute, %q before, is %q after one pass without HTTPRoutes; T's older Ingress edited to its host "+
			"is %q: the host changed namespace", before, after, ingState())
	}
}
