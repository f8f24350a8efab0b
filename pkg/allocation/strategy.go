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
	Pick(r Route, candidates []ShardLoad) string
}

// ShardLoad is what a strategy knows of a shard.
type ShardLoad struct {
	Name string
	// Labels are the shard's (ShardSpec.Labels), for scores and extenders.
	Labels map[string]string
	// Routes bound to the shard so far (existing allocations plus this plan's).
	Routes int
	// Capacity is the shard's ready routers (at least 1), the LeastLoaded denominator.
	Capacity int
	// Seq is how many routes the whole cluster had allocated before this pick (RoundRobin's
	// cursor, recomputed from state rather than kept in memory).
	Seq int
	// Utilization is the shard's reported load against its capacity, in percent (LeastUtilized),
	// when LoadKnown.
	Utilization int32
	LoadKnown   bool
	// RequestsPerSecond its routers report in all, and the capacity of one router (when
	// LoadKnown), for scores and extenders.
	RequestsPerSecond int64
	CapacityRPS       int32
}

// StrategyFor returns the named strategy: RoundRobin, LeastRoutes, LeastLoaded or LeastUtilized
// (default LeastRoutes).
func StrategyFor(name v1alpha1.AllocationStrategy) (Strategy, error) {
	switch name {
	case "", v1alpha1.StrategyLeastRoutes:
		return leastRoutes{}, nil
	case v1alpha1.StrategyRoundRobin:
		return roundRobin{}, nil
	case v1alpha1.StrategyLeastLoaded:
		return leastLoaded{}, nil
	case v1alpha1.StrategyLeastUtilized:
		return leastUtilized{}, nil
	}
	return nil, fmt.Errorf("unknown allocation strategy %q (RoundRobin, LeastRoutes, LeastLoaded, LeastUtilized)", name)
}

// roundRobin cycles through the candidates in name order.
type roundRobin struct{}

func (roundRobin) Pick(_ Route, c []ShardLoad) string { return c[c[0].Seq%len(c)].Name }

// leastRoutes picks the shard with the fewest bound routes; ties go to the first by name.
type leastRoutes struct{}

func (leastRoutes) Pick(_ Route, c []ShardLoad) string {
	return slices.MinFunc(c, func(a, b ShardLoad) int { return a.Routes - b.Routes }).Name
}

// leastLoaded picks the shard with the fewest routes per ready router, so a shard with more
// replicas takes proportionally more routes; ties go to the first by name.
type leastLoaded struct{}

func (leastLoaded) Pick(_ Route, c []ShardLoad) string { return slices.MinFunc(c, perRouter).Name }

// perRouter compares a.Routes/a.Capacity with b.Routes/b.Capacity without division (no ready
// router counts as one).
func perRouter(a, b ShardLoad) int {
	return a.Routes*max(b.Capacity, 1) - b.Routes*max(a.Capacity, 1)
}

// utilizationStep is how close two shards' utilizations must be (percentage points) to count as
// equal: within it, routes per router decide, so reporting noise does not flip every pick and a
// burst of new routes spreads over shards of like load.
const utilizationStep = 5

// leastUtilized picks the shard with the most headroom (the lowest reported utilization, in steps
// of utilizationStep), then the fewest routes per ready router, then the first by name. While any
// candidate's load is unknown it picks as LeastLoaded: an unknown load is never taken as zero.
type leastUtilized struct{}

func (leastUtilized) Pick(r Route, c []ShardLoad) string {
	if slices.ContainsFunc(c, func(s ShardLoad) bool { return !s.LoadKnown }) {
		return leastLoaded{}.Pick(r, c)
	}
	return slices.MinFunc(c, func(a, b ShardLoad) int {
		if d := a.Utilization/utilizationStep - b.Utilization/utilizationStep; d != 0 {
			return int(d)
		}
		return perRouter(a, b)
	}).Name
}
