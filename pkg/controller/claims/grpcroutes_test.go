package claims

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestAClaimBindsTheGRPCRoutesItNames: in a cluster serving Gateway API, claim team-a/shop names
// its Ingress web and GRPCRoute rpc: both are bound, in the seed's record and the claim's status.
// Where the cluster does not serve GRPCRoutes to Shardgate (its role may not list them), the
// Ingress is bound and the claim says why its GRPCRoute is not.
func TestAClaimBindsTheGRPCRoutesItNames(t *testing.T) {
	for _, served := range []bool{true, false} {
		rpc := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rpc"}}
		w := newClaimWorld(t, nil, rpc)
		w.user.Caps.GatewayAPI.Served = true
		w.user.Routes = routekinds.Builtin()
		if !served {
			w.user.Routes = routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
			w.user.Caps.Unserved = map[schema.GroupVersionKind]bool{routekinds.GRPCRoute{}.GroupVersionKind(): true}
		}
		c := w.claim(t)
		c.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "rpc"}}
		must(t, w.user.Client.Update(context.Background(), c))

		w.reconcile(t)
		recs, st := w.cluster(t).Status.Claims, w.claim(t).Status
		if len(recs) != 1 || !slices.Equal(recs[0].Ingresses, []string{"web"}) {
			t.Fatalf("served %v: status.claims %+v", served, recs)
		}
		switch {
		case served && (!slices.Equal(recs[0].GRPCRoutes, []string{"rpc"}) ||
			!slices.Equal(st.BoundGRPCRoutes, []string{"rpc"}) || st.BoundCount != 2):
			t.Errorf("served: record binds GRPCRoutes %v; claim status binds %v, count %d; want [rpc], 2",
				recs[0].GRPCRoutes, st.BoundGRPCRoutes, st.BoundCount)
		case !served && (len(recs[0].GRPCRoutes) != 0 || st.BoundCount != 1 ||
			!strings.Contains(recs[0].Message, "its GRPCRoutes are not bound: the cluster does not serve GRPCRoutes")):
			t.Errorf("unserved: record binds GRPCRoutes %v (count %d), message %q; want none bound, and why",
				recs[0].GRPCRoutes, st.BoundCount, recs[0].Message)
		}
	}
}
