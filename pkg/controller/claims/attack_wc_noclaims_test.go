package claims

import (
	"context"
	"errors"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttackWCLastClaimDeletedDropsItsRecord (guard, passes): once the last IngressClaim is gone
// (deleted by its tenant, whatever its reclaim policy or released generation), the pass that no
// longer lists routes still drops its record from status.claims (its shard and names go), even
// while the routes could not be read at all.
func TestAttackWCLastClaimDeletedDropsItsRecord(t *testing.T) {
	for _, policy := range []v1alpha1.ReclaimPolicy{v1alpha1.ReclaimRetain, v1alpha1.ReclaimRecycle, v1alpha1.ReclaimDelete} {
		t.Run(string(policy), func(t *testing.T) {
			w := newClaimWorld(t, nil)
			c := w.claim(t)
			c.Spec.ReclaimPolicy = policy
			must(t, w.user.Client.Update(context.Background(), c))
			w.reconcile(t)
			recs := w.cluster(t).Status.Claims
			if len(recs) != 1 || recs[0].Shard == "" {
				t.Fatalf("status.claims %+v: want the claim admitted", recs)
			}
			// Its Ingress gone past the grace: Retain releases it (ReleasedGeneration), Delete
			// deletes the claim, Recycle keeps it bound.
			must(t, w.user.Client.Delete(context.Background(), &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}))
			w.r.ReclaimGrace = 0
			w.reconcile(t)
			if c := (&v1alpha1.IngressClaim{}); w.user.Client.Get(context.Background(), client.ObjectKeyFromObject(w.claimKey()), c) == nil {
				if policy == v1alpha1.ReclaimRetain && w.cluster(t).Status.Claims[0].ReleasedGeneration == 0 {
					t.Fatalf("not released: %+v", w.cluster(t).Status.Claims)
				}
				must(t, w.user.Client.Delete(context.Background(), c))
			}
			lists, failRoutes := 0, true
			w.user.Client = interceptor.NewClient(w.user.Client.(client.WithWatch), interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*networkingv1.IngressList); ok {
						lists++
						if failRoutes {
							return errors.New("routes unreadable")
						}
					}
					return c.List(ctx, list, opts...)
				}})
			w.reconcile(t)
			if recs := w.cluster(t).Status.Claims; len(recs) != 0 || lists != 0 {
				t.Errorf("after the last claim was deleted: status.claims %+v, %d route lists", recs, lists)
			}
		})
	}
}

func (w *claimWorld) claimKey() *v1alpha1.IngressClaim {
	return &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop"}}
}
