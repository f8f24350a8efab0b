package allocation

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReview43bRoundKeepsDeletedRoutes: a round of yielded passes ends only when a pass finds no
// status it has not told in the round, or tells every one. Tenant T keeps statusesBeforeYield
// statuses failing at the plan's head (as in review43) and creates routes in a loop, deleting
// each once told: every pass finds T's newest routes' statuses fresh, so the round never ends,
// and Reconciler.rounds[cluster] keeps the UID of every route T ever created in it, long deleted.
func TestReview43bRoundKeepsDeletedRoutes(t *testing.T) {
	r, key, u, fc, head, _ := review43Cluster(t, statusesBeforeYield)
	failing := map[string]bool{}
	for _, n := range head {
		failing[n] = true
	}
	fc.Client = interceptor.NewClient(u.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, o client.Object, p client.Patch,
			opts ...client.SubResourcePatchOption,
		) error {
			if failing[o.GetName()] {
				return apierrors.NewForbidden(gatewayv1.Resource("httproutes"), o.GetName(), fmt.Errorf("denied by a webhook"))
			}
			return cl.SubResource(sub).Patch(ctx, o, p, opts...)
		},
		List: undecidedWhilePlanning(fc),
	})
	const passes = 30
	for p := range passes {
		for i := range statusesBeforeYield {
			must(t, u.Create(context.Background(), tenantHTTPRoute(fmt.Sprintf("t%02d-%d", p, i))))
			if p >= 2 {
				must(t, u.Delete(context.Background(), tenantHTTPRoute(fmt.Sprintf("t%02d-%d", p-2, i))))
			}
		}
		_, _ = r.Reconcile(context.Background(), controllertest.Request(key))
	}
	l := &gatewayv1.HTTPRouteList{}
	must(t, u.List(context.Background(), l))
	live := map[types.UID]bool{}
	for _, o := range l.Items {
		live[o.UID] = true
	}
	r.unseenMu.Lock()
	defer r.unseenMu.Unlock()
	gone := 0
	for uid := range r.rounds[key] {
		if !live[uid] {
			gone++
		}
	}
	if gone > 0 {
		t.Fatalf("after %d passes of T creating and deleting routes, the cluster's round holds %d routes (%d of them deleted, "+
			"%d routes live); want none deleted kept", passes, len(r.rounds[key]), gone, len(live))
	}
}
