package allocation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

var t0 = time.Unix(1_000_000, 0)

func route(ns, name string, age int, shard string, hosts ...string) Route {
	return Route{Namespace: ns, Name: name, Hosts: hosts, Shard: shard, Created: t0.Add(time.Duration(age) * time.Second)}
}

// held is a route Shardgate allocated before: on shard, holding the hosts it was given.
func held(r Route, shard string, hosts ...string) Route {
	r.Shard, r.HeldHosts = shard, hosts
	return r
}

func defaultHost(t *testing.T, ns, name string) string {
	t.Helper()
	l, ok := names.DefaultHostLabel(ns, name)
	if !ok {
		t.Fatalf("no default label for %s/%s", ns, name)
	}
	return l
}

func testShards() []Shard {
	return []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1},
		{Name: "edge", Domain: "edge.c1.z", Capacity: 1},
		{Name: "team", Domain: "team.c1.z", Capacity: 1, NamespaceSelector: labels.SelectorFromSet(labels.Set{"team": "a"})},
	}
}

func plan(t *testing.T, strategy v1alpha1.AllocationStrategy, mutate func(*Config), shards []Shard, routes ...Route) map[string]Allocation {
	t.Helper()
	s, err := StrategyFor(strategy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ClusterDomain: "c1.z", Zone: "z", Strategy: s}
	if mutate != nil {
		mutate(&cfg)
	}
	out := map[string]Allocation{}
	for _, a := range PlanAllocations(cfg, shards, routes) {
		out[a.Namespace+"/"+a.Name] = a
	}
	if len(out) != len(routes) {
		t.Fatalf("%d decisions for %d routes", len(out), len(routes))
	}
	return out
}

func TestAllocationRules(t *testing.T) {
	p := plan(t, "LeastRoutes", nil, testShards(),
		route("ns1", "nohost", 1, "", ""),
		route("ns1", "underedge", 2, "", "shop.edge.c1.z"),
		route("ns1", "custom", 3, "", "shop.example.org"),
		route("ns2", "steal", 4, "", "shop.example.org"),
		route("ns1", "wild", 5, "", "*.example.org"),
		route("ns1", "foreign", 6, "", "app.c2.z"),
		route("ns1", "seed", 7, "", "z"),
		route("ns1", "split", 8, "", "a.edge.c1.z", "b.c1.z"),
		route("ns1", "teamonly", 9, "", "x.team.c1.z"),
		route("ns1", "bad", 10, "", "not_valid.example"),
		route("ns1", "sameNS", 11, "", "shop.example.org"),
	)
	check := func(key, shard string, hosts []string, cname string) {
		t.Helper()
		a := p[key]
		if a.Rejected || a.Shard != shard || !slices.Equal(a.Hosts, hosts) || a.CNAMETarget != cname {
			t.Errorf("%s: got %+v; want shard %s hosts %v cname %q", key, a, shard, hosts, cname)
		}
	}
	rejected := func(key, reason string) {
		t.Helper()
		if a := p[key]; !a.Rejected || !strings.Contains(a.Reason, reason) {
			t.Errorf("%s: got %+v; want rejected with %q", key, a, reason)
		}
	}
	check("ns1/nohost", "default", []string{defaultHost(t, "ns1", "nohost") + ".c1.z"}, "")
	check("ns1/underedge", "edge", []string{"shop.edge.c1.z"}, "")
	// Custom host: the strategy picks among eligible shards (LeastRoutes: default and edge have 1
	// each, team does not accept ns1), and the user is told the CNAME target.
	check("ns1/custom", "default", []string{"shop.example.org"}, "c1.z")
	rejected("ns2/steal", "already served for namespace ns1")
	rejected("ns1/wild", "wildcard host")
	rejected("ns1/foreign", "another cluster or the seed")
	rejected("ns1/seed", "another cluster or the seed")
	rejected("ns1/split", "two shards")
	rejected("ns1/teamonly", "does not accept")
	rejected("ns1/bad", "not a valid DNS name")
	if a := p["ns1/sameNS"]; a.Rejected {
		t.Errorf("same namespace may reuse its host: %+v", a)
	}
}

func TestAllocationPolicies(t *testing.T) {
	p := plan(t, "", func(c *Config) { c.AllowWildcards, c.InterNamespace = true, true }, testShards(),
		route("ns1", "a", 1, "", "shop.example.org"),
		route("ns2", "b", 2, "", "shop.example.org"),
		route("ns1", "w", 3, "", "*.example.org"),
		route("ns1", "wc", 4, "", "*.x.edge.c1.z"),
	)
	for key, a := range p {
		if a.Rejected {
			t.Errorf("%s rejected under permissive policies: %s", key, a.Reason)
		}
	}
	if p["ns1/wc"].Shard != "edge" {
		t.Errorf("a wildcard under a shard's domain goes to that shard: %+v", p["ns1/wc"])
	}
}

func TestAllocationIsStickyAndMovesOnlyFromRemovedShards(t *testing.T) {
	routes := []Route{
		route("ns", "old-edge", 1, "edge", "a.example.org"),
		route("ns", "old-gone", 2, "removed", "b.example.org"),
		route("ns", "new", 3, "", "c.example.org"),
	}
	// Even though edge has a route and default has none, the allocated one stays.
	p := plan(t, "LeastRoutes", nil, testShards()[:2], routes...)
	if a := p["ns/old-edge"]; a.Shard != "edge" || a.MovedFrom != "" {
		t.Errorf("allocated route moved: %+v", a)
	}
	if a := p["ns/old-gone"]; a.Rejected || a.MovedFrom != "removed" || a.Shard == "" {
		t.Errorf("route of a removed shard must move: %+v", a)
	}
	// Restarting (same input) decides the same.
	again := plan(t, "LeastRoutes", nil, testShards()[:2], routes...)
	for k := range p {
		if p[k].Shard != again[k].Shard {
			t.Errorf("%s: %s then %s", k, p[k].Shard, again[k].Shard)
		}
	}
	// An allocated route keeps its host against a newer claim from another namespace, whatever
	// the order routes are listed in.
	p = plan(t, "", nil, testShards(), route("ns2", "newer", 1, "", "x.example.org"), route("ns1", "owner", 5, "default", "x.example.org"))
	if !p["ns2/newer"].Rejected || p["ns1/owner"].Rejected {
		t.Errorf("allocated claim must win: %+v", p)
	}
}

func TestAllocationStrategiesSpread(t *testing.T) {
	shards := []Shard{{Name: "a", Domain: "a.c1.z", Capacity: 1}, {Name: "b", Domain: "b.c1.z", Capacity: 3}, {Name: "default", Domain: "c1.z", Capacity: 1}}
	var routes []Route
	for i := range 9 {
		routes = append(routes, route("ns", "r"+string(rune('a'+i)), i, "", "h"+string(rune('a'+i))+".example.org"))
	}
	count := func(p map[string]Allocation) map[string]int {
		c := map[string]int{}
		for _, a := range p {
			c[a.Shard]++
		}
		return c
	}
	if c := count(plan(t, "RoundRobin", nil, shards, routes...)); c["a"] != 3 || c["b"] != 3 || c["default"] != 3 {
		t.Errorf("RoundRobin: %v", c)
	}
	if c := count(plan(t, "LeastRoutes", nil, shards, routes...)); c["a"] != 3 || c["b"] != 3 || c["default"] != 3 {
		t.Errorf("LeastRoutes: %v", c)
	}
	// LeastLoaded: b has three routers, so it takes about three times the routes.
	if c := count(plan(t, "LeastLoaded", nil, shards, routes...)); c["b"] < 5 || c["a"] > 2 || c["default"] > 2 {
		t.Errorf("LeastLoaded: %v", c)
	}
	// No shard at all: every route is rejected, nothing panics.
	for _, a := range plan(t, "RoundRobin", nil, nil, routes...) {
		if !a.Rejected {
			t.Errorf("allocated with no shards: %+v", a)
		}
	}
}

// TestHostsBelongToTheirFirstClaimant: an old Ingress edited to a host another namespace already
// serves is refused, and the holder keeps it (before, the older Ingress took it).
func TestHostsBelongToTheirFirstClaimant(t *testing.T) {
	p := plan(t, "", nil, testShards(),
		held(route("ns2", "old", 1, "", "x.example.org"), "default", "old.example.org"), // edited from old.example.org
		held(route("ns1", "holder", 10, "", "x.example.org"), "edge", "x.example.org"),
		route("ns3", "newcomer", 0, "", "x.example.org"),
	)
	if a := p["ns1/holder"]; a.Rejected || a.Shard != "edge" {
		t.Errorf("holder lost its host: %+v", a)
	}
	for _, k := range []string{"ns2/old", "ns3/newcomer"} {
		if a := p[k]; !a.Rejected || !strings.Contains(a.Reason, "already served for namespace ns1") {
			t.Errorf("%s: %+v, want refused", k, a)
		}
	}
	// A host dropped from the holder's spec is no longer held.
	p = plan(t, "", nil, testShards(),
		held(route("ns1", "holder", 10, "", "y.example.org"), "edge", "x.example.org"),
		route("ns2", "next", 20, "", "x.example.org"))
	if a := p["ns2/next"]; a.Rejected {
		t.Errorf("a released host stays taken: %+v", a)
	}
}

// TestHostUnderAnotherShardMoves: an Ingress edited to a host under another shard's domain moves
// there (DNS sends the name to that shard; staying would 404), or is refused when that shard
// does not take it.
func TestHostUnderAnotherShardMoves(t *testing.T) {
	p := plan(t, "", nil, testShards(),
		held(route("ns1", "moved", 1, "", "a.edge.c1.z"), "default", "a.c1.z"),
		held(route("ns1", "refused", 2, "", "b.team.c1.z"), "default", "b.c1.z"),
	)
	if a := p["ns1/moved"]; a.Rejected || a.Shard != "edge" || a.MovedFrom != "default" || !strings.Contains(a.MoveReason, "shard edge's domain") {
		t.Errorf("not moved: %+v", a)
	}
	if a := p["ns1/refused"]; !a.Rejected || !strings.Contains(a.Reason, "does not accept") {
		t.Errorf("not refused: %+v", a)
	}
}

// TestDefaultHosts: default hosts never collide (a-b in c and a in b-c), no one can claim another
// Ingress' default host before it exists, and a shard's own names belong to Shardgate.
func TestDefaultHosts(t *testing.T) {
	squat := defaultHost(t, "prod", "web") + ".c1.z"
	p := plan(t, "", func(c *Config) { c.AllowWildcards = true }, testShards(),
		route("c", "a-b", 1, "", ""),
		route("b-c", "a", 2, "", ""),
		route("evil", "squat", 3, "", squat),
		route("prod", "web", 4, "", ""),
		route("evil", "apex", 5, "", "c1.z"),
		route("evil", "edgeapex", 6, "", "edge.c1.z"),
		route("evil", "wildapex", 7, "", "*.edge.c1.z"),
		route("evil", "dotted-squat", 8, "", defaultHost(t, "prod", "v1.api")+".c1.z"),
		route("prod", "v1.api", 9, "", ""),
		route("evil", "canary", 10, "", "shardgate-canary.edge.c1.z"),
	)
	ab, a := p["c/a-b"], p["b-c/a"]
	if ab.Rejected || a.Rejected || ab.Hosts[0] == a.Hosts[0] {
		t.Fatalf("default hosts collide: %+v / %+v", ab, a)
	}
	if r := p["evil/squat"]; !r.Rejected || !strings.Contains(r.Reason, "default host of Ingress web in namespace prod") {
		t.Errorf("squat allowed: %+v", r)
	}
	if w := p["prod/web"]; w.Rejected || w.Hosts[0] != squat {
		t.Errorf("owner of the default host: %+v", w)
	}
	for _, k := range []string{"evil/apex", "evil/edgeapex", "evil/wildapex"} {
		if r := p[k]; !r.Rejected || !strings.Contains(r.Reason, "no route may claim it") {
			t.Errorf("%s: %+v, want refused", k, r)
		}
	}
	if r := p["evil/dotted-squat"]; !r.Rejected || !strings.Contains(r.Reason, "reserved") {
		t.Errorf("squat of a dotted name allowed: %+v", r)
	}
	if r := p["evil/canary"]; !r.Rejected || !strings.Contains(r.Reason, "reserved for Shardgate's canary of shard edge") {
		t.Errorf("the canary's host taken: %+v", r)
	}
	// Its own default host, written into the rule on an earlier pass, is its own to keep.
	self := held(route("prod", "web", 4, "", squat), "default", squat)
	if r := plan(t, "", nil, testShards(), self)["prod/web"]; r.Rejected || r.Hosts[0] != squat {
		t.Errorf("own default host refused: %+v", r)
	}
}

// TestDefaultHostsFollowTheDomain: after a zone (or cluster ID) change, the default hosts
// Shardgate wrote are rewritten under the new domain; custom hosts stay as they are.
func TestDefaultHostsFollowTheDomain(t *testing.T) {
	old := defaultHost(t, "ns", "web") + ".c1.oldzone"
	legacy := "api-ns.edge.c1.oldzone" // a default host from before labels carried a hash
	p := plan(t, "", nil, testShards(),
		held(route("ns", "web", 1, "", old), "default", old),
		held(route("ns", "api", 2, "", legacy), "edge", legacy),
		held(route("ns", "shop", 3, "", "shop.example.org"), "default", "shop.example.org"),
	)
	if a := p["ns/web"]; a.Rejected || a.Hosts[0] != defaultHost(t, "ns", "web")+".c1.z" || a.Shard != "default" {
		t.Errorf("default host not rewritten: %+v", a)
	}
	if a := p["ns/api"]; a.Rejected || a.Hosts[0] != defaultHost(t, "ns", "api")+".edge.c1.z" || a.Shard != "edge" {
		t.Errorf("legacy default host not rewritten: %+v", a)
	}
	if a := p["ns/shop"]; a.Rejected || a.Hosts[0] != "shop.example.org" {
		t.Errorf("custom host changed: %+v", a)
	}
}

// FuzzValidateHost: whatever a user writes as a host, validation never panics, and an accepted
// host is a valid (wildcard) DNS name inside the cluster domain or outside the shared zone.
func FuzzValidateHost(f *testing.F) {
	for _, h := range []string{"shop.example.org", "*.c1.z", "app.c2.z", "Z.", "", "a..b", "*.*.x", "x.c1.z.", strings.Repeat("a.", 140)} {
		f.Add(h, true)
	}
	f.Fuzz(func(t *testing.T, host string, wild bool) {
		cfg := Config{ClusterDomain: "c1.z", Zone: "z", AllowWildcards: wild}
		h, err := ValidateHost(host, cfg)
		if err != nil {
			return
		}
		if strings.HasPrefix(h, "*.") {
			if !wild || len(validation.IsWildcardDNS1123Subdomain(h)) > 0 {
				t.Fatalf("accepted wildcard %q (allowed=%v)", h, wild)
			}
		} else if len(validation.IsDNS1123Subdomain(h)) > 0 {
			t.Fatalf("accepted invalid host %q", h)
		}
		if InDomain(h, "z") && !InDomain(h, "c1.z") {
			t.Fatalf("accepted a foreign host %q", h)
		}
	})
}

// TestRoutesGoToTheirFlavoursShards: with shards of two flavours, a route goes only to a shard
// whose routers are the flavour its class asks for; its host under another flavour's shard, a
// claim on one, a flavour no shard has, and a class changed under an allocated route are each
// said.
func TestRoutesGoToTheirFlavoursShards(t *testing.T) {
	shards := []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"},
		{Name: "fast", Domain: "fast.c1.z", Capacity: 1, Flavour: "fake"},
		{Name: "mine-team", Domain: "mine-team.c1.z", Capacity: 1, Flavour: "traefik", Claim: "team/mine"},
	}
	of := func(r Route, flavour string) Route {
		r.Flavour = flavour
		return r
	}
	pinned := of(route("team", "pinned", 6, ""), "fake")
	pinned.Pin = "mine-team"
	p := plan(t, "LeastRoutes", nil, shards,
		of(route("ns", "a", 1, ""), "traefik"),
		of(route("ns", "b", 2, ""), "fake"),
		of(route("ns", "c", 3, "", "x.fast.c1.z"), "traefik"),
		of(route("ns", "d", 4, ""), "gone"),
		of(held(route("ns", "e", 5, "", "e.c1.z"), "default", "e.c1.z"), "fake"),
		pinned,
	)
	for key, want := range map[string]string{"ns/a": "default", "ns/b": "fast"} {
		if a := p[key]; a.Rejected || a.Shard != want {
			t.Errorf("%s: %+v, want shard %s", key, a, want)
		}
	}
	for key, why := range map[string]string{
		"ns/c":        "under shard fast's domain, whose routers are fake; its class asks for traefik routers",
		"ns/d":        "no shard has gone routers",
		"team/pinned": "binds it to shard mine-team, whose routers are traefik; the route asks for fake routers",
		// Its host stays under the default shard's domain, which DNS sends to the other flavour.
		"ns/e": "under shard default's domain, whose routers are traefik; its class asks for fake routers",
	} {
		if a := p[key]; !a.Rejected || !strings.Contains(a.Reason, why) {
			t.Errorf("%s: %+v, want rejected: %s", key, a, why)
		}
	}
	// An allocated route whose class changed moves to a shard of its new flavour, and says why.
	moved := plan(t, "LeastRoutes", nil, shards, of(held(route("ns", "f", 1, ""), "default"), "fake"))["ns/f"]
	if moved.Shard != "fast" || moved.MovedFrom != "default" ||
		!strings.Contains(moved.MoveReason, "its class asks for fake routers now; shard default's are traefik") {
		t.Errorf("class changed: %+v", moved)
	}
}

// TestShardsFilteringByClassAnnotation: a route allocated to a shard whose routers select by
// class annotation carries that shard's class (and loses it when rejected or moved to a shard that
// selects by label); a route naming its class by the legacy annotation, which such routers would
// read as a second shard filter, is refused there with a reason and allocated elsewhere as before.
func TestShardsFilteringByClassAnnotation(t *testing.T) {
	shards := []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"},
		{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "haproxy", RouteClass: "shardgate-shard-heavy",
			SharesRouteSpecs: true},
	}
	refused := func(r Route) Route {
		r.Refusal = "spec.defaultBackend beside rules would receive every request"
		return r
	}
	of := func(r Route, flavour string, legacy bool) Route {
		r.Flavour, r.ClassAnnotated = flavour, legacy
		return r
	}
	p := plan(t, "LeastRoutes", nil, shards,
		of(route("ns", "a", 1, ""), "haproxy", false),
		of(route("ns", "b", 2, ""), "traefik", true),
		of(route("ns", "c", 3, ""), "haproxy", true),
		of(route("ns", "d", 4, "", "x.heavy.c1.z", "*.bad"), "haproxy", false),
		of(held(route("ns", "e", 5, ""), "heavy"), "traefik", false),
		refused(of(route("ns", "f", 6, ""), "haproxy", false)),
		refused(of(route("ns", "g", 7, ""), "traefik", false)),
	)
	for key, want := range map[string][2]string{"ns/a": {"heavy", "shardgate-shard-heavy"}, "ns/b": {"default", ""},
		"ns/e": {"default", ""}, "ns/g": {"default", ""}} {
		if a := p[key]; a.Rejected || a.Shard != want[0] || a.RouteClass != want[1] {
			t.Errorf("%s: %+v, want shard %s with route class %q", key, a, want[0], want[1])
		}
	}
	if a := p["ns/c"]; !a.Rejected || a.RouteClass != "" ||
		!strings.Contains(a.Reason, "own ingress.class annotation would contradict; remove it and name the class in spec.ingressClassName") {
		t.Errorf("legacy class annotation on a class-annotation shard: %+v", a)
	}
	if a := p["ns/f"]; !a.Rejected || a.SharesRouteSpecs ||
		!strings.Contains(a.Reason, "shard heavy's haproxy routers share route specs between tenants: spec.defaultBackend") {
		t.Errorf("a route whose spec the shard's routers would share: %+v", a)
	}
	if a := p["ns/g"]; a.Rejected || a.Shard != "default" {
		t.Errorf("the same on routers that share no route specs: %+v, want allocated as before", a)
	}
	if a := p["ns/a"]; !a.SharesRouteSpecs {
		t.Errorf("allocated to a shard whose routers share route specs: %+v", a)
	}
	if a := p["ns/d"]; !a.Rejected || a.RouteClass != "" {
		t.Errorf("rejected after the shard was fixed by a host: %+v, want no route class", a)
	}
}

// TestACustomHostHasOneShard: a custom host's CNAME names one shard, so a second route for it (an
// HTTPRoute beside the namespace's Ingress, or two Ingresses for two paths) goes to the shard the
// host is already on, whatever the strategy would pick, held or decided in this pass.
func TestACustomHostHasOneShard(t *testing.T) {
	shards := testShards()[:2]
	ing := held(route("ns-a", "ing", 1, "edge", "shop.example.org"), "edge", "shop.example.org")
	httpRoute := route("ns-a", "ing", 2, "", "shop.example.org")
	httpRoute.Kind = "HTTPRoute"
	for _, strategy := range []v1alpha1.AllocationStrategy{"RoundRobin", "LeastLoaded"} {
		s, err := StrategyFor(strategy)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{ClusterDomain: "c1.z", Zone: "z", Strategy: s}
		got := PlanAllocations(cfg, shards, []Route{ing, httpRoute})
		if got[0].Shard != "edge" || got[1].Shard != "edge" || got[1].CNAMETarget != "edge.c1.z" {
			t.Errorf("%s, held: %s on %s, %s on %s (CNAME %s); want both on edge", strategy,
				got[0].Kind, got[0].Shard, got[1].Kind, got[1].Shard, got[1].CNAMETarget)
		}
		// Neither allocated yet: the second follows the first's decision.
		fresh := []Route{route("ns-a", "one", 1, "", "shop.example.org"), route("ns-a", "two", 2, "", "shop.example.org"),
			route("ns-a", "three", 3, "", "shop.example.org")}
		var placed []string
		for _, a := range PlanAllocations(cfg, shards, fresh) {
			placed = append(placed, a.Shard)
		}
		if placed[0] != placed[1] || placed[1] != placed[2] {
			t.Errorf("%s, new: one custom host on shards %v", strategy, placed)
		}
	}
}

// TestSharedConfigAnnotationsAreRefusedWhereRead: a route carrying an annotation a shard's routers
// read as shared configuration, under any prefix, is refused there with its name, and goes where
// no router reads it; a route without one, or with one of a similar name, is not.
func TestSharedConfigAnnotationsAreRefusedWhereRead(t *testing.T) {
	shards := []Shard{
		{Name: "default", Domain: "c1.z", Capacity: 1, Flavour: "traefik"},
		{Name: "heavy", Domain: "heavy.c1.z", Capacity: 1, Flavour: "haproxy", ReadsAnnotations: []string{"route-acl"}},
	}
	with := func(r Route, flavour string, annotations ...string) Route {
		r.Flavour, r.Annotations = flavour, annotations
		return r
	}
	p := plan(t, "LeastRoutes", nil, shards,
		with(route("ns", "a", 1, ""), "haproxy", "example.com/x", "haproxy.org/route-acl"),
		with(route("ns", "b", 2, ""), "haproxy", "route-acl"),
		with(route("ns", "c", 3, ""), "haproxy", "example.com/route-acl-x", "x.io/my-route-acl"),
		with(route("ns", "d", 4, ""), "traefik", "haproxy.org/route-acl"),
	)
	for key, why := range map[string]string{"ns/a": "read annotation haproxy.org/route-acl as configuration",
		"ns/b": "read annotation route-acl as configuration"} {
		if a := p[key]; !a.Rejected || !strings.Contains(a.Reason, "shard heavy's haproxy routers "+why) {
			t.Errorf("%s: %+v, want refused: %s", key, a, why)
		}
	}
	for key, shard := range map[string]string{"ns/c": "heavy", "ns/d": "default"} {
		if a := p[key]; a.Rejected || a.Shard != shard {
			t.Errorf("%s: %+v, want shard %s", key, a, shard)
		}
	}
}
