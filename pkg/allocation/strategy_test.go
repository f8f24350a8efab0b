package allocation

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestStrategies(t *testing.T) {
	load := func(seq int, shards ...ShardLoad) []ShardLoad {
		for i := range shards {
			shards[i].Seq = seq
		}
		return shards
	}
	tests := []struct {
		strategy v1alpha1.AllocationStrategy
		in       []ShardLoad
		want     string
	}{
		{"RoundRobin", load(0, ShardLoad{Name: "a"}, ShardLoad{Name: "b"}, ShardLoad{Name: "c"}), "a"},
		{"RoundRobin", load(4, ShardLoad{Name: "a"}, ShardLoad{Name: "b"}, ShardLoad{Name: "c"}), "b"},
		{"RoundRobin", load(7, ShardLoad{Name: "only"}), "only"},
		{"LeastRoutes", load(0, ShardLoad{Name: "a", Routes: 3}, ShardLoad{Name: "b", Routes: 1}, ShardLoad{Name: "c", Routes: 2}), "b"},
		{"LeastRoutes", load(0, ShardLoad{Name: "a", Routes: 1}, ShardLoad{Name: "b", Routes: 1}), "a"}, // tie: first by name
		{"", load(0, ShardLoad{Name: "a", Routes: 2}, ShardLoad{Name: "b", Routes: 0}), "b"},            // default LeastRoutes
		{"LeastLoaded", load(0, ShardLoad{Name: "a", Routes: 4, Capacity: 4}, ShardLoad{Name: "b", Routes: 2, Capacity: 1}), "a"},
		{"LeastLoaded", load(0, ShardLoad{Name: "a", Routes: 2, Capacity: 2}, ShardLoad{Name: "b", Routes: 1, Capacity: 1}), "a"}, // tie
		{"LeastLoaded", load(0, ShardLoad{Name: "a", Routes: 1, Capacity: 0}, ShardLoad{Name: "b", Routes: 2, Capacity: 0}), "a"}, // no ready router counts as one
		// LeastUtilized: the most headroom wins, whatever the routes.
		{"LeastUtilized", load(0, ShardLoad{Name: "a", Routes: 1, Capacity: 1, Utilization: 90, LoadKnown: true},
			ShardLoad{Name: "b", Routes: 50, Capacity: 1, Utilization: 20, LoadKnown: true}), "b"},
		// Within one step, routes per router decide; then the name.
		{"LeastUtilized", load(0, ShardLoad{Name: "a", Routes: 9, Capacity: 1, Utilization: 21, LoadKnown: true},
			ShardLoad{Name: "b", Routes: 3, Capacity: 1, Utilization: 24, LoadKnown: true}), "b"},
		{"LeastUtilized", load(0, ShardLoad{Name: "a", Routes: 3, Capacity: 1, Utilization: 24, LoadKnown: true},
			ShardLoad{Name: "b", Routes: 3, Capacity: 1, Utilization: 20, LoadKnown: true}), "a"},
		// An unknown load is not zero: LeastLoaded decides while any candidate's load is unknown.
		{"LeastUtilized", load(0, ShardLoad{Name: "a", Routes: 1, Capacity: 1, Utilization: 95, LoadKnown: true},
			ShardLoad{Name: "b", Routes: 5, Capacity: 1}), "a"},
		{"LeastUtilized", load(0, ShardLoad{Name: "a", Routes: 5, Capacity: 1},
			ShardLoad{Name: "b", Routes: 1, Capacity: 1}), "b"},
	}
	for _, tt := range tests {
		s, err := StrategyFor(tt.strategy)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Pick(Route{}, tt.in); got != tt.want {
			t.Errorf("%s %+v: got %s want %s", tt.strategy, tt.in, got, tt.want)
		}
	}
	if _, err := StrategyFor("Random"); err == nil {
		t.Error("unknown strategy accepted")
	}
}
