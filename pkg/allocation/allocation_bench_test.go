package allocation

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkPlanAllocations10k is one allocation pass over a cluster of 10,000 Ingresses: half
// already allocated, half new (the shape of a pass in the middle of a bulk allocation).
func BenchmarkPlanAllocations10k(b *testing.B) {
	cfg := Config{ClusterDomain: "c1.example.org", Zone: "example.org", Strategy: leastRoutes{}}
	shards := []Shard{{Name: "default", Domain: "c1.example.org"}, {Name: "a", Domain: "a.c1.example.org"}, {Name: "b", Domain: "b.c1.example.org"}}
	routes := make([]Route, 10000)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range routes {
		routes[i] = Route{Namespace: fmt.Sprintf("ns%d", i%10), Name: fmt.Sprintf("r%d", i), Hosts: []string{""}, Created: t0.Add(time.Duration(i) * time.Millisecond)}
		if i%2 == 0 {
			routes[i].Shard = shards[i%3].Name
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := PlanAllocations(cfg, shards, routes); len(got) != len(routes) {
			b.Fatalf("%d decisions for %d routes", len(got), len(routes))
		}
	}
}

// BenchmarkStrategies10k compares one allocation pass of 10,000 routes (half new) by strategy,
// side by side in one run (the machine is noisy): LeastRoutes (the baseline), LeastUtilized with
// every shard's load known, and the operator guide's CEL score. It reports each pass's median of
// five and its ratio to the baseline's.
func BenchmarkStrategies10k(b *testing.B) {
	shards := []Shard{{Name: "default", Domain: "c1.example.org", Capacity: 2, LoadKnown: true, Utilization: 40},
		{Name: "a", Domain: "a.c1.example.org", Capacity: 2, LoadKnown: true, Utilization: 70,
			Labels: map[string]string{"tier": "gold"}},
		{Name: "b", Domain: "b.c1.example.org", Capacity: 1, LoadKnown: true, Utilization: 10}}
	routes := make([]Route, 10000)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range routes {
		routes[i] = Route{Kind: "Ingress", Namespace: fmt.Sprintf("ns%d", i%10), Name: fmt.Sprintf("r%d", i), Hosts: []string{""},
			Created: t0.Add(time.Duration(i) * time.Millisecond), NamespaceLabels: map[string]string{"tier": "gold"}}
		if i%2 == 0 {
			routes[i].Shard = shards[i%3].Name
		}
	}
	score, err := CompileScore(`((route.namespaceLabels.?tier.orValue("") == "gold") == (shard.labels.?tier.orValue("") == "gold")` +
		` ? 0 : 1000) + shard.utilization`)
	if err != nil {
		b.Fatal(err)
	}
	strategies := []struct {
		name string
		s    Strategy
	}{{"LeastRoutes", leastRoutes{}}, {"LeastUtilized", leastUtilized{}}, {"Score", Scored(score, leastRoutes{}, &Fallbacks{})}}
	median := func(s Strategy) time.Duration {
		cfg := Config{ClusterDomain: "c1.example.org", Zone: "example.org", Strategy: s}
		var d []time.Duration
		for range 5 {
			start := time.Now()
			PlanAllocations(cfg, shards, routes)
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[2]
	}
	for b.Loop() {
		median(strategies[0].s) // warm up
		ms := make([]time.Duration, len(strategies))
		for i, st := range strategies {
			ms[i] = median(st.s)
		}
		for i, st := range strategies {
			b.ReportMetric(float64(ms[i].Microseconds())/1000, st.name+"-ms/pass")
			b.Logf("%-13s %6.1f ms per pass of 10,000 routes (5,000 new): %.2fx LeastRoutes", st.name,
				float64(ms[i].Microseconds())/1000, float64(ms[i])/float64(ms[0]))
		}
	}
}
