package claims

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttackWCRefusedClaimStillListsEveryRoute (Low, performance): the routes matter only to
// claims Decide may admit or keep; a claim refused because the profile does not allow claims
// reads none of them. Yet one such claim, which any tenant T can create in any namespace, brings
// back the pass over every route of the cluster on each change of one (the 10,000 lists of
// BenchmarkAllocation's adopted phase the commit removed).
func TestAttackWCRefusedClaimStillListsEveryRoute(t *testing.T) {
	w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) { ci.Spec.Claims.Allowed = false })
	lists := 0
	w.user.Client = interceptor.NewClient(w.user.Client.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*networkingv1.IngressList); ok {
				lists++
			}
			return c.List(ctx, list, opts...)
		}})
	w.reconcile(t)
	w.reconcile(t)
	recs := w.cluster(t).Status.Claims
	if len(recs) != 1 || recs[0].Reason != v1alpha1.ReasonClaimsNotAllowed {
		t.Fatalf("status.claims %+v: want the claim refused", recs)
	}
	if lists != 0 {
		t.Errorf("%d lists of every Ingress for a claim refused without reading any", lists)
	}
}
