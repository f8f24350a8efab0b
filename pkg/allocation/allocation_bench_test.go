package allocation

import (
	"fmt"
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
