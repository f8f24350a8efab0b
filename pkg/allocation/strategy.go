package allocation

import (
	"fmt"
	"slices"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Strategy picks a shard for a new route among the eligible candidates (never empty, sorted by
// name). Strategies are deterministic: the same state gives the same choice, so a restarted
// controller decides as the old one would have.
type Strategy interface {
	Pick(candidates []ShardLoad) string
}

// ShardLoad is what a strategy knows of a shard.
type ShardLoad struct {
	Name string
	// Routes bound to the shard so far (existing allocations plus this plan's).
	Routes int
	// Capacity is the shard's ready routers (at least 1), the LeastLoaded denominator.
	Capacity int
	// Seq is how many routes the whole cluster had allocated before this pick (RoundRobin's
	// cursor, recomputed from state rather than kept in memory).
	Seq int
}

// StrategyFor returns the named strategy: RoundRobin, LeastRoutes or LeastLoaded (default
// LeastRoutes).
func StrategyFor(name v1alpha1.AllocationStrategy) (Strategy, error) {
	switch name {
	case "", v1alpha1.StrategyLeastRoutes:
		return leastRoutes{}, nil
	case v1alpha1.StrategyRoundRobin:
		return roundRobin{}, nil
	case v1alpha1.StrategyLeastLoaded:
		return leastLoaded{}, nil
	}
	return nil, fmt.Errorf("unknown allocation strategy %q (RoundRobin, LeastRoutes, LeastLoaded)", name)
}

// roundRobin cycles through the candidates in name order.
type roundRobin struct{}

func (roundRobin) Pick(c []ShardLoad) string { return c[c[0].Seq%len(c)].Name }

// leastRoutes picks the shard with the fewest bound routes; ties go to the first by name.
type leastRoutes struct{}

func (leastRoutes) Pick(c []ShardLoad) string {
	return slices.MinFunc(c, func(a, b ShardLoad) int { return a.Routes - b.Routes }).Name
}

// leastLoaded picks the shard with the fewest routes per ready router, so a shard with more
// replicas takes proportionally more routes; ties go to the first by name.
type leastLoaded struct{}

func (leastLoaded) Pick(c []ShardLoad) string {
	return slices.MinFunc(c, func(a, b ShardLoad) int {
		// Compare a.Routes/a.Capacity with b.Routes/b.Capacity without division.
		return a.Routes*max(b.Capacity, 1) - b.Routes*max(a.Capacity, 1)
	}).Name
}
