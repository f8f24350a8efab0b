package allocation

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestMarksOfANewlyPlannedKindAreNotTrusted: a kind the cluster's passes never planned has its
// routes' marks forgotten; kinds planned before keep theirs, also while not served for a while
// (plannedKinds); a cluster with no record trusts all.
func TestMarksOfANewlyPlannedKindAreNotTrusted(t *testing.T) {
	held := func(kind string) allocation.Route {
		return allocation.Route{Kind: kind, Name: "r", Shard: "default", HeldHosts: []string{"shop.example.com"}}
	}
	counts := func(kinds ...string) []v1alpha1.RouteKindCount {
		var out []v1alpha1.RouteKindCount
		for _, k := range kinds {
			out = append(out, v1alpha1.RouteKindCount{Kind: k})
		}
		return out
	}
	for _, c := range []struct {
		name    string
		st      v1alpha1.ClusterIngressStatus
		trusted map[string]bool
	}{
		{"upgrade from a release before plannedKinds: GRPCRoute is new",
			v1alpha1.ClusterIngressStatus{RouteKinds: counts("Ingress", "HTTPRoute")},
			map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": false}},
		{"HTTPRoutes unserved for a pass stay planned",
			v1alpha1.ClusterIngressStatus{RouteKinds: counts("Ingress"), PlannedKinds: []string{"GRPCRoute", "HTTPRoute", "Ingress"}},
			map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": true}},
		{"Gateway API turned on for the first time",
			v1alpha1.ClusterIngressStatus{RouteKinds: counts("Ingress"), PlannedKinds: []string{"Ingress"}},
			map[string]bool{"Ingress": true, "HTTPRoute": false, "GRPCRoute": false}},
		{"never planned: no record", v1alpha1.ClusterIngressStatus{},
			map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": true}},
	} {
		routes := []allocation.Route{held("Ingress"), held("HTTPRoute"), held("GRPCRoute")}
		distrustNewKinds(routes, &c.st)
		for _, r := range routes {
			if got := r.Shard != "" && len(r.HeldHosts) == 1; got != c.trusted[r.Kind] {
				t.Errorf("%s: %s's marks trusted %v, want %v", c.name, r.Kind, got, c.trusted[r.Kind])
			}
		}
	}
	// What a pass records: the kinds planned before and now, a kind unserved now included.
	st := v1alpha1.ClusterIngressStatus{RouteKinds: counts("Ingress"), PlannedKinds: []string{"HTTPRoute", "Ingress"}}
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.GRPCRoute{}}
	if got := plannedKinds(&st, kinds, false); !slices.Equal(got, []string{"GRPCRoute", "HTTPRoute", "Ingress"}) {
		t.Errorf("plannedKinds %v", got)
	}
	if got := unservedPlanned(&st, kinds, false); !slices.Equal(got, []string{"HTTPRoute"}) {
		t.Errorf("unserved planned kinds %v, want HTTPRoute: the pass is held", got)
	}
	// Gateway API turned off on purpose: nothing is held, and its kinds are forgotten.
	ingressOnly := routekinds.Registry{routekinds.Ingress{}}
	if got := unservedPlanned(&st, ingressOnly, true); got != nil {
		t.Errorf("Gateway API off on purpose holds %v", got)
	}
	if got := plannedKinds(&st, ingressOnly, true); !slices.Equal(got, []string{"Ingress"}) {
		t.Errorf("plannedKinds with Gateway API off: %v", got)
	}
}
