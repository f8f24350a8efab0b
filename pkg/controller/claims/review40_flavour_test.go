package claims

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview40ClaimOfAnotherFlavourBindsGRPCRoutes: attacker T (self-harm and a lying status),
// operator clarity. docs/user-guide.md: "HTTPRoutes and GRPCRoutes go to a claim of the cluster's
// default type (the one whose Gateway serves them); a claim of another type does not bind them and
// says so, and they stay where they are." In a cluster whose default flavour (first shard) is
// haproxy and whose profile allows traefik claims, a tenant's traefik claim names GRPCRoute rpc.
// The reconciler's WhyNoGRPCRoutes asks only render.ClaimLimits(traefik), which says Traefik's
// routers serve Gateway API, never whether the claim's flavour is the one Gateway API routes ask
// for (routekinds' gatewayKind.Serves: the default class's flavour, haproxy here). So the claim
// binds rpc (status.boundGRPCRoutes [rpc], "serving ... 1 GRPCRoutes"), claimPins pins it to the
// Traefik shard, and the planner rejects it ("whose routers are traefik; the route asks for
// haproxy routers"): the route leaves where it was and the claim says the opposite of what
// happens. The same holds for HTTPRoutes.
func TestReview40ClaimOfAnotherFlavourBindsGRPCRoutes(t *testing.T) {
	rpc := &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rpc"}}
	w := newClaimWorld(t, func(ci *v1alpha1.ClusterIngress) {
		ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Flavour: v1alpha1.FlavourHAProxy}}
		ci.Spec.Claims.Flavours = []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourTraefik}}
	}, rpc)
	w.user.Caps.GatewayAPI.Served, w.user.Caps.AdmissionPolicy = true, true
	w.user.Routes = routekinds.Builtin()
	c := w.claim(t)
	c.Spec.Flavour = v1alpha1.FlavourTraefik
	c.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "rpc"}}
	must(t, w.user.Client.Update(context.Background(), c))
	w.reconcile(t)
	recs := w.cluster(t).Status.Claims
	if len(recs) != 1 || recs[0].Shard == "" {
		t.Fatalf("premise: the traefik claim is not admitted: %+v", recs)
	}
	if len(recs[0].GRPCRoutes) != 0 || !strings.Contains(recs[0].Message, "GRPCRoutes are not bound") {
		t.Errorf("a %s claim in a cluster whose default flavour is %s binds GRPCRoutes %v (allocation will reject "+
			"them: they ask for the default flavour's routers); message %q", recs[0].Flavour,
			v1alpha1.FlavourHAProxy, recs[0].GRPCRoutes, recs[0].Message)
	}
}
