package claims

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview40RoleWithoutGRPCRoutesDeletesTheClaim: attacker O, or the operator during an
// upgrade. Tenant team-a's claim shop (reclaimPolicy Delete) binds only GRPCRoute rpc and is
// serving. The user cluster's owner drops grpcroutes from Shardgate's role (or re-applies an older
// rbac.yaml): at re-engagement Capabilities.Unserved marks GRPCRoute and the cluster's route kinds
// leave it out. The claims reconciler then reads the claim's GRPCRoute as "not bound", so every
// route it bound is "gone", the reclaim grace runs out and it DELETES the tenant's IngressClaim
// and its record (its shard and routers go), although the GRPCRoute still exists and only could
// not be read. Restoring the role does not bring the claim back. Nothing may be deleted because
// something could not be read (docs/security.md, the operator's attacker).
func TestReview40RoleWithoutGRPCRoutesDeletesTheClaim(t *testing.T) {
	rpc := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rpc"}}
	w := newClaimWorld(t, nil, rpc)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	w.r.Clock = clk
	w.user.Caps.GatewayAPI.Served = true
	w.user.Routes = routekinds.Builtin()
	c := w.claim(t)
	c.Spec.Ingresses = nil
	c.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "rpc"}}
	c.Spec.ReclaimPolicy = v1alpha1.ReclaimDelete
	must(t, w.user.Client.Update(context.Background(), c))
	w.reconcile(t)
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || len(recs[0].GRPCRoutes) != 1 || !recs[0].EverBound {
		t.Fatalf("premise: the claim does not bind its GRPCRoute: %+v", recs)
	}

	// O's role no longer lets Shardgate list GRPCRoutes (re-engaged: the kind is unserved).
	w.user.Routes = routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	w.user.Caps.Unserved = map[schema.GroupVersionKind]bool{routekinds.GRPCRoute{}.GroupVersionKind(): true}
	w.reconcile(t)
	clk.SetTime(clk.Now().Add(2 * time.Minute)) // past the reclaim grace (1m)
	w.reconcile(t)

	err := w.user.Client.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "shop"}, &v1alpha1.IngressClaim{})
	if apierrors.IsNotFound(err) {
		t.Errorf("the tenant's IngressClaim was deleted (reclaimPolicy Delete) because Shardgate may no longer list GRPCRoutes; " +
			"its GRPCRoute still exists")
	}
	if recs := w.cluster(t).Status.Claims; len(recs) != 1 || recs[0].Shard == "" {
		t.Errorf("the claim's record (and so its shard) is gone because GRPCRoutes could not be read: %+v", recs)
	}
}
