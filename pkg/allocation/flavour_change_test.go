package allocation

import (
	"strings"
	"testing"
)

// TestShardFlavourChangedUnderItsRoutes: shard heavy was Traefik and is HAProxy now, whose routers
// select their routes by Shardgate's class annotation. The Ingresses it holds stay on it and get
// its route class, whatever class they name, hosts under its domain included; a new route naming
// Traefik's class does not land there; an HTTPRoute, which no class annotation selects, leaves;
// a route carrying an annotation HAProxy reads as shared configuration (set before the admission
// policy refused it) is refused there with the annotation named.
func TestShardFlavourChangedUnderItsRoutes(t *testing.T) {
	shards := []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"},
		{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "haproxy", RouteClass: "shardgate-shard-heavy",
			SharesRouteSpecs: true, ReadsAnnotations: []string{"backend-config-snippet", "timeout-server"}},
	}
	ingress := func(r Route) Route {
		r.Kind, r.Flavour, r.SelectableByClass = "Ingress", "traefik", true
		return r
	}
	httpRoute := ingress(held(route("ns", "h", 5, ""), "heavy"))
	httpRoute.Kind, httpRoute.SelectableByClass = "HTTPRoute", false
	planted := ingress(held(route("ns", "p", 6, "", "p.heavy.c1.z"), "heavy", "p.heavy.c1.z"))
	planted.Annotations = []string{"shardgate.io/shard", "example.com/timeout-server"}
	p := plan(t, "LeastRoutes", nil, shards,
		ingress(held(route("ns", "a", 1, ""), "heavy")),
		ingress(held(route("ns", "b", 2, "", "b.heavy.c1.z"), "heavy", "b.heavy.c1.z")),
		ingress(route("ns", "c", 3, "")),
		ingress(route("ns", "d", 4, "", "d.heavy.c1.z")),
		httpRoute, planted,
	)
	for key, want := range map[string][2]string{"ns/a": {"heavy", "shardgate-shard-heavy"},
		"ns/b": {"heavy", "shardgate-shard-heavy"}, "ns/c": {"default", ""}, "ns/h": {"default", ""}} {
		if a := p[key]; a.Rejected || a.Shard != want[0] || a.RouteClass != want[1] {
			t.Errorf("%s: %+v, want shard %s with route class %q", key, a, want[0], want[1])
		}
	}
	if a := p["ns/a"]; a.MovedFrom != "" {
		t.Errorf("an Ingress on the changed shard moved: %+v", a)
	}
	for key, why := range map[string]string{
		"ns/d": "under shard heavy's domain, whose routers are haproxy; its class asks for traefik routers",
		"ns/p": "shard heavy's haproxy routers read annotation example.com/timeout-server as configuration every " +
			"tenant's routes share; remove it",
	} {
		if a := p[key]; !a.Rejected || !strings.Contains(a.Reason, why) {
			t.Errorf("%s: %+v, want rejected: %s", key, a, why)
		}
	}
}
