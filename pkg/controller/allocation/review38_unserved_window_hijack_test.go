package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestReview38AfterAnUnservedWindowAnOlderRouteTakesAHeldHost (review38 finding, fails on
// purpose): hosts belong to their first claimant (HeldHosts), so T's HTTPRoute, older than shop's
// but edited to shop's host later, is refused, and stays refused. distrustNewKinds forgets every
// hold of a kind absent from the last status.routeKinds, and that is also the case after one pass
// during which the kind was not served (a transient 403 on HTTPRoutes at first contact since
// cc6026b, Gateway API turned off and on, a kind briefly not in discovery). T waits for such a
// moment: the first pass after
// it plans both routes as new, by age, and T's older route takes shop's host; shop's HTTPRoute,
// allocated and served for months, is rejected and loses its shard Gateway. No forged mark, no
// right beyond namespace edit.
func TestReview38AfterAnUnservedWindowAnOlderRouteTakesAHeldHost(t *testing.T) {
	ctx := context.Background()
	host := "pay.shop.example"
	parent := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: names.ParentGatewayName}
	t0 := time.Now().Add(-365 * 24 * time.Hour)
	route := func(ns, name string, created time.Time, h string) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name),
			CreationTimestamp: metav1.NewTime(created)},
			Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
				Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(h)}}}
	}
	tenant := route("team", "old", t0, "team.example")          // T's, created a year ago
	shop := route("shop", "pay", t0.Add(30*24*time.Hour), host) // shop's, a month younger
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, kinds,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		tenant, shop)
	controllertest.Reconcile(t, r, key, 3)
	// T edits its old route to shop's host: refused, shop holds it.
	got := &gatewayv1.HTTPRoute{}
	must(t, u.Get(ctx, client.ObjectKeyFromObject(tenant), got))
	got.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	must(t, u.Update(ctx, got))
	controllertest.Reconcile(t, r, key, 3)
	state := func(o *gatewayv1.HTTPRoute) string {
		x := &gatewayv1.HTTPRoute{}
		must(t, u.Get(ctx, client.ObjectKeyFromObject(o), x))
		return x.Annotations[v1alpha1.AllocationAnnotation] + " " + x.Annotations[v1alpha1.HostsAnnotation]
	}
	if s := state(tenant); s == v1alpha1.AllocationAllocated+" "+host {
		t.Fatalf("precondition: T's route edited to shop's held host is %q", s)
	}
	before := state(shop)

	// A pass while HTTPRoutes are not served, then they are again.
	access := r.Access.(*clusteraccess.Fake)
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: routekinds.Registry{routekinds.Ingress{}}})
	controllertest.Reconcile(t, r, key, 1)
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: kinds})
	controllertest.Reconcile(t, r, key, 3)
	if after := state(shop); after != before {
		t.Errorf("shop's HTTPRoute, %q before, is %q after one pass without HTTPRoutes; T's older route edited to its host "+
			"is %q: the host changed namespace", before, after, state(tenant))
	}
}
