package allocation

import "testing"

// review31Shards: default (Traefik, the first shard) and heavy, which ran Traefik routers and is
// HAProxy now (the CRD lets a shard that is not the first change in place from traefik to haproxy).
func review31Shards() []Shard {
	return []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"},
		{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "haproxy", RouteClass: "shardgate-shard-heavy",
			SharesRouteSpecs: true, ReadsAnnotations: []string{"ssl-redirect", "timeout-server", "route-acl"}},
	}
}

// TestReview31FlavourChangeDropsServedRoutes (review31 finding, the operator at 3 a.m.): before
// this change the CRD refused an in-place flavour change because "its routes would stop being
// served". Now the edit is accepted, and in one pass the planner rejects (removes from every
// router, label and route class taken away) routes the shard served a moment before:
//   - an HTTPRoute holding a host under heavy's domain (HAProxy serves no HTTPRoute, and the host
//     pins it to heavy: it cannot "leave" as the commit says HTTPRoutes do);
//   - an Ingress carrying an annotation another controller used, harmless under Traefik, e.g.
//     `nginx.ingress.kubernetes.io/ssl-redirect: "false"` (many charts set it), whose name HAProxy
//     reads under any prefix;
//   - an Ingress with a spec.defaultBackend beside rules or a path with a space (accepted on
//     Traefik shards: "refusing it there would drop routes on upgrade").
//
// The operator's edit was accepted without a word; the reasons appear only on each tenant's route.
// (The annotation case bites once readAnnotation sees the live annotations: today the user-cluster
// cache trims them away, see pkg/controller/allocation/review31_trimmed_annotations_test.go.)
//
// Expected: a flavour change loses no route that was served. Either the change is held (the old
// routers kept, a condition naming the routes that would be refused) or refused up front, or
// such routes keep being served until fixed. This test asserts the routes stay allocated.
func TestReview31FlavourChangeDropsServedRoutes(t *testing.T) {
	ingress := func(r Route) Route {
		r.Kind, r.Flavour, r.SelectableByClass = "Ingress", "traefik", true
		return r
	}
	httpRoute := held(route("ns", "gw", 1, "", "gw.heavy.c1.z"), "heavy", "gw.heavy.c1.z")
	httpRoute.Kind, httpRoute.Flavour = "HTTPRoute", "traefik"
	nginxLeftover := ingress(held(route("ns", "shop", 2, "", "shop.heavy.c1.z"), "heavy", "shop.heavy.c1.z"))
	nginxLeftover.Annotations = []string{"nginx.ingress.kubernetes.io/ssl-redirect"}
	withDefault := ingress(held(route("ns", "api", 3, "", "api.heavy.c1.z"), "heavy", "api.heavy.c1.z"))
	withDefault.Refusal = "a default backend beside rules would be the shared frontends' catch-all"
	p := plan(t, "LeastRoutes", nil, review31Shards(), httpRoute, nginxLeftover, withDefault)
	for key, a := range p {
		if a.Rejected {
			t.Errorf("%s was served on heavy before its flavour changed, now rejected: %s", key, a.Reason)
		}
	}
}

// TestReview31IngressOnHAProxyShardCannotLeaveByItsClass (review31 finding, regression for
// clusters that never change a flavour; tenant T and the operator): shard heavy has always been
// HAProxy. T's Ingress named `shardgate-haproxy` and was allocated there; T now names `shardgate`
// (Traefik's class) to move it to Traefik routers. Before this change the planner moved it
// ("its class asks for traefik routers now"); keeps() now keeps every Ingress on a shard that
// selects by class annotation whatever class it names, so it stays on HAProxy routers with no
// reason given, contradicting "an Ingress goes only to shards of its class's flavour"
// (security.md, TestRoutesGoToTheirFlavoursShards). keeps() cannot tell a shard whose flavour
// changed under the route from a route whose class changed on an unchanged shard.
//
// Expected: the route moves to a Traefik shard, with the move reason.
func TestReview31IngressOnHAProxyShardCannotLeaveByItsClass(t *testing.T) {
	r := held(route("ns", "web", 1, ""), "heavy")
	r.Kind, r.Flavour, r.SelectableByClass = "Ingress", "traefik", true // T renamed its class to Traefik's
	p := plan(t, "LeastRoutes", nil, review31Shards(), r)
	if a := p["ns/web"]; a.Rejected || a.Shard != "default" || a.MovedFrom != "heavy" {
		t.Errorf("an Ingress that names Traefik's class stays on HAProxy shard %s (route class %q, moved from %q); "+
			"want it moved to default: its class asks for traefik routers", a.Shard, a.RouteClass, a.MovedFrom)
	}
}
