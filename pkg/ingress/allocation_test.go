package ingress

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

var t0 = time.Unix(1_000_000, 0)

func route(ns, name string, age int, shard string, hosts ...string) Route {
	return Route{Namespace: ns, Name: name, Hosts: hosts, Shard: shard, Created: t0.Add(time.Duration(age) * time.Second)}
}

func testShards() []AllocShard {
	return []AllocShard{
		{Name: "default", Domain: "c1.z", Capacity: 1},
		{Name: "edge", Domain: "edge.c1.z", Capacity: 1},
		{Name: "team", Domain: "team.c1.z", Capacity: 1, NamespaceSelector: labels.SelectorFromSet(labels.Set{"team": "a"})},
	}
}

func plan(t *testing.T, strategy string, mutate func(*AllocationConfig), shards []AllocShard, routes ...Route) map[string]Allocation {
	t.Helper()
	s, err := StrategyFor(strategy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := AllocationConfig{ClusterDomain: "c1.z", Zone: "z", Strategy: s}
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
	check("ns1/nohost", "default", []string{"nohost-ns1.c1.z"}, "")
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
	p := plan(t, "", func(c *AllocationConfig) { c.AllowWildcards, c.InterNamespace = true, true }, testShards(),
		route("ns1", "a", 1, "", "shop.example.org"),
		route("ns2", "b", 2, "", "shop.example.org"),
		route("ns1", "w", 3, "", "*.example.org"),
		route("ns1", "wc", 4, "", "*.edge.c1.z"),
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
	shards := []AllocShard{{Name: "a", Domain: "a.c1.z", Capacity: 1}, {Name: "b", Domain: "b.c1.z", Capacity: 3}, {Name: "default", Domain: "c1.z", Capacity: 1}}
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

// FuzzValidateHost: whatever a user writes as a host, validation never panics, and an accepted
// host is a valid (wildcard) DNS name inside the cluster domain or outside the shared zone.
func FuzzValidateHost(f *testing.F) {
	for _, h := range []string{"shop.example.org", "*.c1.z", "app.c2.z", "Z.", "", "a..b", "*.*.x", "x.c1.z.", strings.Repeat("a.", 140)} {
		f.Add(h, true)
	}
	f.Fuzz(func(t *testing.T, host string, wild bool) {
		cfg := AllocationConfig{ClusterDomain: "c1.z", Zone: "z", AllowWildcards: wild}
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
