package allocation

import (
	"slices"
	"strings"
	"testing"
)

// Shard heavy as Traefik routers run it (with a change to HAProxy pending or not), and as
// HAProxy's, which select their routes by Shardgate's class annotation.
var (
	heavyTraefik = Shard{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "traefik"}
	heavyHAProxy = Shard{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "haproxy",
		RouteClass: "shardgate-shard-heavy", SharesRouteSpecs: true, ReadsAnnotations: []string{"timeout-server"}}
	defaultShard = Shard{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"}
)

// ingressFor is an Ingress whose class asks for flavour's routers.
func ingressFor(r Route, flavour string) Route {
	r.Kind, r.Flavour, r.SelectableByClass = "Ingress", flavour, true
	return r
}

// TestAChangingShardMarksWhatItWillKeep: while heavy's change to HAProxy is held, the Ingresses it
// serves whose class asks for Traefik get the kept-for mark (Traefik) and HAProxy's route class
// (so that HAProxy's routers select them from their start; Traefik's ignore it), HTTPRoutes
// neither, and none of them moves.
func TestAChangingShardMarksWhatItWillKeep(t *testing.T) {
	changing := heavyTraefik
	changing.ChangingTo, changing.ChangingRouteClass = "haproxy", "shardgate-shard-heavy"
	httpRoute := held(route("ns", "h", 3, "", "h.heavy.c1.z"), "heavy", "h.heavy.c1.z")
	httpRoute.Kind, httpRoute.Flavour = "HTTPRoute", "traefik"
	p := plan(t, "LeastRoutes", nil, []Shard{defaultShard, changing},
		ingressFor(held(route("ns", "a", 1, "", "a.heavy.c1.z"), "heavy", "a.heavy.c1.z"), "traefik"), httpRoute)
	if a := p["ns/a"]; a.Shard != "heavy" || a.KeptFor != "traefik" || a.RouteClass != "shardgate-shard-heavy" {
		t.Errorf("ns/a: %+v, want on heavy, marked kept for traefik, with HAProxy's route class already", a)
	}
	if a := p["ns/h"]; a.Shard != "heavy" || a.KeptFor != "" || a.RouteClass != "" {
		t.Errorf("ns/h: %+v, want on heavy, unmarked", a)
	}
	if a := plan(t, "LeastRoutes", nil, []Shard{defaultShard, heavyTraefik},
		ingressFor(held(route("ns", "a", 1, "", "a.heavy.c1.z"), "heavy", "a.heavy.c1.z"), "traefik"))["ns/a"]; a.KeptFor != "" {
		t.Errorf("ns/a with no change pending: %+v, want unmarked", a)
	}
}

// TestShardFlavourChangedUnderItsRoutes: heavy was Traefik and is HAProxy now. The Ingresses it
// held with the kept-for mark stay on it and get its route class, hosts under its domain included;
// one whose class asked for Traefik but has no mark (it came after) does not stay, nor does a new
// route naming Traefik's class land there; an HTTPRoute leaves; a route carrying an annotation
// HAProxy reads as shared configuration is refused there with the annotation named.
func TestShardFlavourChangedUnderItsRoutes(t *testing.T) {
	kept := func(r Route) Route {
		r = ingressFor(r, "traefik")
		r.KeptFor = "traefik"
		return r
	}
	httpRoute := held(route("ns", "h", 5, ""), "heavy")
	httpRoute.Kind, httpRoute.Flavour = "HTTPRoute", "traefik"
	planted := kept(held(route("ns", "p", 6, "", "p.heavy.c1.z"), "heavy", "p.heavy.c1.z"))
	planted.Annotations = []string{"shardgate.io/shard", "example.com/timeout-server"}
	p := plan(t, "LeastRoutes", nil, []Shard{defaultShard, heavyHAProxy},
		kept(held(route("ns", "a", 1, ""), "heavy")),
		kept(held(route("ns", "b", 2, "", "b.heavy.c1.z"), "heavy", "b.heavy.c1.z")),
		ingressFor(route("ns", "c", 3, ""), "traefik"),
		ingressFor(route("ns", "d", 4, "", "d.heavy.c1.z"), "traefik"),
		ingressFor(held(route("ns", "u", 7, ""), "heavy"), "traefik"),
		httpRoute, planted,
	)
	for key, want := range map[string][3]string{"ns/a": {"heavy", "shardgate-shard-heavy", "traefik"},
		"ns/b": {"heavy", "shardgate-shard-heavy", "traefik"}, "ns/c": {"default", "", ""}, "ns/h": {"default", "", ""},
		"ns/u": {"default", "", ""}} {
		if a := p[key]; a.Rejected || a.Shard != want[0] || a.RouteClass != want[1] || a.KeptFor != want[2] {
			t.Errorf("%s: %+v, want shard %s with route class %q, kept for %q", key, a, want[0], want[1], want[2])
		}
	}
	if a := p["ns/a"]; a.MovedFrom != "" {
		t.Errorf("a kept Ingress moved: %+v", a)
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

// TestAKeptRouteLeavesByItsClass (review31, regression): an Ingress kept on heavy for Traefik
// that names HAProxy's class since stays (HAProxy's routers serve it) and loses its mark; named
// back to Traefik's class, it leaves for a Traefik shard, as naming a class always moved a route.
func TestAKeptRouteLeavesByItsClass(t *testing.T) {
	r := ingressFor(held(route("ns", "a", 1, ""), "heavy"), "haproxy")
	r.KeptFor = "traefik"
	a := plan(t, "LeastRoutes", nil, []Shard{defaultShard, heavyHAProxy}, r)["ns/a"]
	if a.Shard != "heavy" || a.KeptFor != "" {
		t.Fatalf("named HAProxy's class: %+v, want on heavy, unmarked", a)
	}
	r.KeptFor, r.Flavour = "", "traefik"
	if a := plan(t, "LeastRoutes", nil, []Shard{defaultShard, heavyHAProxy}, r)["ns/a"]; a.Shard != "default" ||
		a.MovedFrom != "heavy" {
		t.Errorf("named Traefik's class again: %+v, want moved to default", a)
	}
}

// TestChangeBlockers: planned once as the shard runs now and once with its new flavour, the routes
// it serves now that would be refused or move hold the change, with why; routes on other shards,
// routes refused already and routes that stay hold nothing.
func TestChangeBlockers(t *testing.T) {
	changing := heavyTraefik
	changing.ChangingTo, changing.ChangingRouteClass = "haproxy", "shardgate-shard-heavy"
	httpRoute := held(route("ns", "h", 3, ""), "heavy")
	httpRoute.Kind, httpRoute.Flavour = "HTTPRoute", "traefik"
	spec := ingressFor(held(route("ns", "s", 4, "", "s.heavy.c1.z"), "heavy", "s.heavy.c1.z"), "traefik")
	spec.Refusal = "spec.defaultBackend beside rules"
	routes := []Route{
		ingressFor(held(route("ns", "a", 1, "", "a.heavy.c1.z"), "heavy", "a.heavy.c1.z"), "traefik"),
		ingressFor(held(route("ns", "o", 2, "", "o.c1.z"), "default", "o.c1.z"), "traefik"),
		httpRoute, spec,
		ingressFor(route("ns", "bad", 5, "", "x.other.c1.z"), "traefik"),
	}
	s, _ := StrategyFor("LeastRoutes")
	cfg := Config{ClusterDomain: "c1.z", Zone: "z", Strategy: s}
	now := PlanAllocations(cfg, []Shard{defaultShard, changing}, routes)
	after := PlanAllocations(cfg, []Shard{defaultShard, heavyHAProxy}, AsMarked(routes, now))
	got := ChangeBlockers("heavy", now, after)
	if len(got) != 2 || got[0].Kind != "HTTPRoute" || got[0].Name != "h" ||
		!strings.HasPrefix(got[0].Why, "would move to shard default") || got[1].Name != "s" ||
		!strings.Contains(got[1].Why, "would be refused: shard heavy's haproxy routers share route specs") {
		t.Errorf("blockers %+v, want HTTPRoute ns/h moving and Ingress ns/s refused", got)
	}
	if i := slices.IndexFunc(routes, func(r Route) bool { return r.Name == "a" }); AsMarked(routes, now)[i].KeptFor != "traefik" ||
		routes[i].KeptFor != "" {
		t.Errorf("AsMarked: %+v (and the input %+v)", AsMarked(routes, now)[i], routes[i])
	}
}

// TestTheWayBackKeepsRoutesRenamedForIt (review35, the operator): heavy runs HAProxy and a change
// to Traefik is held by the Ingresses on it naming HAProxy's class. A tenant renames its Ingress to
// Traefik's class to release the hold: heavy keeps it (HAProxy's routers serve it by its class
// annotation, whatever class it names), marked kept for Traefik, host under heavy's domain
// included, and the change planned with Traefik keeps it too; without a change pending, the same
// rename moves it (as naming a class always did).
func TestTheWayBackKeepsRoutesRenamedForIt(t *testing.T) {
	back := heavyHAProxy
	back.ChangingTo = "traefik"
	renamed := ingressFor(held(route("ns", "r", 1, "", "r.heavy.c1.z"), "heavy", "r.heavy.c1.z"), "traefik")
	s, _ := StrategyFor("LeastRoutes")
	cfg := Config{ClusterDomain: "c1.z", Zone: "z", Strategy: s}
	now := PlanAllocations(cfg, []Shard{defaultShard, back}, []Route{renamed})
	if a := now[0]; a.Rejected || a.Shard != "heavy" || a.KeptFor != "traefik" || a.RouteClass != "shardgate-shard-heavy" {
		t.Fatalf("renamed while the way back is held: %+v, want kept on heavy for traefik, selected by HAProxy's class", a)
	}
	after := PlanAllocations(cfg, []Shard{defaultShard, heavyTraefik}, AsMarked([]Route{renamed}, now))
	if b := ChangeBlockers("heavy", now, after); len(b) != 0 {
		t.Errorf("the way back planned with Traefik: blockers %+v", b)
	}
	if a := plan(t, "LeastRoutes", nil, []Shard{defaultShard, heavyHAProxy}, renamed)["ns/r"]; !a.Rejected {
		t.Errorf("renamed with no change pending: %+v, want refused (its host is under HAProxy shard heavy's domain)", a)
	}
}
