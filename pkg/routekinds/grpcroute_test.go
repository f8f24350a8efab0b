package routekinds

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestEveryGatewayRouteKindIsToldAlike: HTTPRoutes and GRPCRoutes are Shardgate's by the same
// parentRef, get their default host, exactly their shard's Gateway and Shardgate's parent entry,
// lose the shard's Gateway and its routers' entries when rejected, and are then AlreadySays.
func TestEveryGatewayRouteKindIsToldAlike(t *testing.T) {
	label, _ := names.DefaultHostLabel("team", "web")
	host := label + ".c1.z.test"
	for _, c := range []struct {
		kind Kind
		new  func() client.Object
	}{
		{HTTPRoute{}, func() client.Object { return &gatewayv1.HTTPRoute{} }},
		{GRPCRoute{}, func() client.Object { return &gatewayv1.GRPCRoute{} }},
	} {
		t.Run(c.kind.Name(), func(t *testing.T) {
			k := c.kind
			r := c.new()
			r.SetNamespace("team")
			r.SetName("web")
			r.SetGeneration(2)
			*gatewayRouteOf(r).parents = []gatewayv1.ParentReference{otherParent, parentRef}
			serves, err := k.Serves(context.Background(), nil, &v1alpha1.ClusterIngressSpec{}, twoFlavours)
			if err != nil {
				t.Fatal(err)
			}
			if _, ours := serves(r); !ours || k.ServedElsewhere(r, twoFlavours) != "" {
				t.Fatal("a route attached to the parent is not Shardgate's")
			}
			alloc := allocation.Allocation{Kind: k.Name(), Namespace: "team", Name: "web", Shard: "default",
				Domain: "c1.z.test", Hosts: []string{host}}
			if k.AlreadySays(r, alloc) {
				t.Fatal("a new route already says its allocation")
			}
			want, changed := k.Tell(r, alloc)
			k.TellStatus(want, alloc)
			w := gatewayRouteOf(want)
			if !changed || !slices.Equal(*w.hostnames, []gatewayv1.Hostname{gatewayv1.Hostname(host)}) ||
				len(*w.parents) != 3 || !isShardGateway((*w.parents)[2]) || (*w.parents)[2].Name != "router-default" {
				t.Fatalf("told: hostnames %v, parentRefs %+v", *w.hostnames, *w.parents)
			}
			if len(*gatewayRouteOf(r).hostnames) != 0 {
				t.Error("Tell changed the route it was given")
			}
			i := slices.IndexFunc(w.status.Parents, func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == ParentController })
			if i < 0 || !meta.IsStatusConditionTrue(w.status.Parents[i].Conditions, string(gatewayv1.RouteConditionAccepted)) ||
				w.status.Parents[i].Conditions[0].ObservedGeneration != 2 {
				t.Fatalf("parent entry %+v, want Accepted at generation 2", w.status.Parents)
			}
			if !k.AlreadySays(want, alloc) || !slices.Equal(k.Hosts(want), []string{host}) {
				t.Error("a told route does not already say its allocation")
			}

			// The routers accept it; then it is rejected.
			w.status.Parents = append(w.status.Parents, gatewayv1.RouteParentStatus{ControllerName: "traefik.io/gateway-controller",
				ParentRef: shardGatewayRef("default"), Conditions: []metav1.Condition{{Type: "ResolvedRefs",
					Status: metav1.ConditionFalse, Reason: "BackendNotFound", Message: "no web"}}})
			if !k.Published(want, []Shard{{Name: "default"}}) ||
				!slices.Equal(k.RouterProblems(want, Shard{Name: "default"}), []string{"ResolvedRefs=False (BackendNotFound: no web)"}) {
				t.Errorf("the routers' entry is not read: %v", k.RouterProblems(want, Shard{Name: "default"}))
			}
			rejected := allocation.Allocation{Kind: k.Name(), Namespace: "team", Name: "web", Rejected: true, Reason: "host held"}
			x, _ := k.Tell(want, rejected)
			k.TellStatus(x, rejected)
			if xr := gatewayRouteOf(x); slices.ContainsFunc(*xr.parents, isShardGateway) ||
				slices.ContainsFunc(xr.status.Parents, namesAShardGateway) || !k.AlreadySays(x, rejected) {
				t.Errorf("rejected: parentRefs %+v, status %+v", *xr.parents, xr.status.Parents)
			}
			k.Unpublish(want, nil)
			if k.Published(want, nil) || gatewayRouteOf(want).status.Parents == nil {
				t.Error("Unpublish left a shard Gateway's entry, or a nil list the schema refuses")
			}
			if !strings.Contains(k.ReleasedMessage(), k.Name()) {
				t.Errorf("released message %q does not name the kind", k.ReleasedMessage())
			}
		})
	}
}

// TestGRPCRouteGuardsItsOwnParentRefs: a GRPCRoute's guards are the parentRef guards of every
// Gateway API kind, on grpcroutes (the Gateways' guard is HTTPRoute's, once).
func TestGRPCRouteGuardsItsOwnParentRefs(t *testing.T) {
	guards := GRPCRoute{}.Guards()
	if len(guards) != 2 || slices.ContainsFunc(guards, func(g Guard) bool { return g.Resource != "" }) {
		t.Errorf("guards %+v: want the two parentRef guards on the kind's own resource", guards)
	}
	if !slices.Equal(GRPCRoute{}.Protected(), []string{"grpcroutes", "grpcroutes/status"}) {
		t.Errorf("protected %v", GRPCRoute{}.Protected())
	}
	if (GRPCRoute{}).CanaryRoute(Canary{GatewayHost: "x"}) != nil {
		t.Error("a GRPCRoute routes no canary")
	}
	rec := v1alpha1.ClaimRecord{HTTPRoutes: []string{"web"}, GRPCRoutes: []string{"rpc"}}
	if got := (GRPCRoute{}).ClaimBinds(rec); !slices.Equal(got, []string{"rpc"}) {
		t.Errorf("a claim binding GRPCRoute rpc and HTTPRoute web binds GRPCRoutes %v, want [rpc]", got)
	}
}
