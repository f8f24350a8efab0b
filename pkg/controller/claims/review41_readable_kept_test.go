package claims

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview41ReadableDeletedHTTPRouteIsKeptForever: who: O (or the operator: an owner's Gateway
// API set that serves HTTPRoute and GRPCRoute at v1 but not TLSRoute, e.g. Gateway API v1.4.1, or
// Shardgate's TLSRoute CRD being deleted). Then Availability.Served stays true (HTTPRoutes are
// listed: cluster.RouteKinds() has them, in.HTTPRoutes is filled) but RoutersServe() is false, and
// the reconciler marks HTTPRoute "Unreadable" (!RoutersServe()). keep() then keeps every HTTPRoute
// the claim bound before, whether or not it still exists, although Shardgate has just read that
// it does not. Impact: T deletes its HTTPRoute; the claim stays Bound to a route that is gone,
// reclaimPolicy (Delete/Retain) never applies, its routers are held for ever, and the claim
// says its HTTPRoutes "cannot be read now" while they are read every pass (the operator is
// misled). The docs keep bindings only for a kind the cluster stops serving to Shardgate;
// HTTPRoute is still served here.
// Fix: Unreadable only for kinds Shardgate cannot list now (caps.Unserved[kind], or
// !caps.GatewayAPI.Served), or keep() keeps only routes still listed where the kind is listed.
func TestReview41ReadableDeletedHTTPRouteIsKeptForever(t *testing.T) {
	ctx := context.Background()
	web := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	w := newClaimWorld(t, nil, web)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	w.r.Clock = clk
	w.user.Caps.GatewayAPI.Served = true
	w.user.Caps.GatewayAPI.Reason = v1alpha1.ReasonGatewayAPIInstalled
	w.user.Routes = routekinds.Builtin()
	c := w.claim(t)
	c.Spec.Ingresses = nil
	c.Spec.HTTPRoutes = []corev1.LocalObjectReference{{Name: "web"}}
	c.Spec.ReclaimPolicy = v1alpha1.ReclaimDelete
	must(t, w.user.Client.Update(ctx, c))
	w.reconcile(t)
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || len(recs[0].HTTPRoutes) != 1 || !recs[0].EverBound {
		t.Fatalf("premise: the claim does not bind its HTTPRoute: %+v", recs)
	}

	// The owner's set lacks TLSRoute at v1: routes are still served and listed, routers serve none.
	w.user.Caps.GatewayAPI.Missing = []string{"TLSRoute"}
	w.user.Caps.GatewayAPI.Reason = v1alpha1.ReasonGatewayAPITooOld
	if w.user.Caps.GatewayAPI.RoutersServe() {
		t.Fatalf("premise: routers still serve")
	}
	// T deletes its HTTPRoute; Shardgate lists HTTPRoutes and sees it gone.
	must(t, w.user.Client.Delete(ctx, web))
	w.reconcile(t)
	clk.SetTime(clk.Now().Add(2 * time.Minute)) // past the reclaim grace
	w.reconcile(t)

	recs := w.cluster(t).Status.Claims
	for _, r := range recs {
		if len(r.HTTPRoutes) > 0 {
			t.Errorf("the claim still binds HTTPRoutes %v that Shardgate listed as gone (reclaim never applies): %s",
				r.HTTPRoutes, r.Message)
		}
		if strings.Contains(r.Message, "cannot be read now") {
			t.Errorf("the claim says its HTTPRoutes cannot be read, though HTTPRoutes are listed: %s", r.Message)
		}
	}
}
