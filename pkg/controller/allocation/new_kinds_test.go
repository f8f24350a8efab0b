package allocation

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
)

// TestMarksOfANewlyPlannedKindAreNotTrusted: a kind the last pass did not plan has its routes'
// marks forgotten; kinds it planned keep theirs; a cluster never planned trusts all.
func TestMarksOfANewlyPlannedKindAreNotTrusted(t *testing.T) {
	held := func(kind string) allocation.Route {
		return allocation.Route{Kind: kind, Name: "r", Shard: "default", HeldHosts: []string{"shop.example.com"}}
	}
	for _, c := range []struct {
		name    string
		planned []v1alpha1.RouteKindCount
		trusted map[string]bool
	}{
		{"upgrade: GRPCRoute is new", []v1alpha1.RouteKindCount{{Kind: "Ingress"}, {Kind: "HTTPRoute", Routes: 3}},
			map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": false}},
		{"a kind planned with no route is known", []v1alpha1.RouteKindCount{{Kind: "Ingress"}, {Kind: "HTTPRoute"},
			{Kind: "GRPCRoute"}}, map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": true}},
		{"Gateway API turned on", []v1alpha1.RouteKindCount{{Kind: "Ingress", Routes: 9}},
			map[string]bool{"Ingress": true, "HTTPRoute": false, "GRPCRoute": false}},
		{"never planned: no record", nil, map[string]bool{"Ingress": true, "HTTPRoute": true, "GRPCRoute": true}},
	} {
		routes := []allocation.Route{held("Ingress"), held("HTTPRoute"), held("GRPCRoute")}
		distrustNewKinds(routes, c.planned)
		for _, r := range routes {
			if got := r.Shard != "" && len(r.HeldHosts) == 1; got != c.trusted[r.Kind] {
				t.Errorf("%s: %s's marks trusted %v, want %v", c.name, r.Kind, got, c.trusted[r.Kind])
			}
		}
	}
}
