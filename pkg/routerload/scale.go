package routerload

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Defaults of following load.
const (
	DefaultTargetPercent  = 60
	DefaultScaleDownDelay = 5 * time.Minute
	// ScaleDownTolerance is how far below what one router fewer carries at Target the load must
	// fall before it asks for fewer (a fraction, as the HorizontalPodAutoscaler's tolerance).
	ScaleDownTolerance = 0.1
)

// Scale is what following load decides a shard's routers from.
type Scale struct {
	// Min and Max are the shard's replicas and maxReplicas.
	Min, Max int32
	// Eligible, where Bounded (routers take a node each: a required anti-affinity), is the nodes
	// they may run on: a scale-up goes no further (a router with no node would stay Pending).
	Eligible int32
	Bounded  bool
	// Target is the utilization to keep (percent); Delay how long the load must ask for fewer
	// routers before one goes.
	Target int32
	Delay  time.Duration
	// Ready are the shard's ready routers.
	Ready int32
	// Current is the replicas decided last (0: none yet, Min); BelowSince when the load began to
	// ask for fewer (nil: it does not).
	Current    int32
	BelowSince *metav1.Time
}

// Replicas decides how many routers a shard following load runs, given its load now: up at once to
// what keeps the utilization at Target (no further than the eligible nodes), down one router at a
// time once the load has asked for fewer for Delay, never on unknown load, always within Min and
// Max. It returns the replicas and when the load began to ask for fewer (nil when it does not).
//
// The load asks for fewer once one router fewer would carry it at Target less ScaleDownTolerance,
// and stops asking once one fewer would carry it above Target: between the two the ask stays as
// it was. Load that wobbles at a boundary (a cluster's owner can make it) neither restarts the
// wait nor rewrites the seed's status every recheck.
func Replicas(s Scale, l v1alpha1.ShardLoadStatus, now time.Time) (int32, *metav1.Time) {
	hi := max(s.Max, s.Min)
	cur := min(max(s.Current, s.Min), hi)
	if l.State == v1alpha1.LoadUnknown || l.ReportingRouters == 0 || s.Target <= 0 {
		return cur, nil
	}
	// The load is UtilizationPercent (the reporting routers' mean) on each router that serves:
	// the ready ones, or the reporting ones where more report, never more than were decided (a
	// router starting, Pending, or gone with a report still fresh carries nothing yet, or any
	// more). The routers that would carry it at Target each:
	serving := float64(min(max(l.ReportingRouters, s.Ready), cur))
	load, target := float64(l.UtilizationPercent)*serving, float64(s.Target)
	want := max(int32(min(math.Ceil(load/target), float64(hi))), s.Min)
	fewer := float64(cur - 1) // what one router fewer carries at Target: fewer*target
	switch {
	case want > cur:
		if s.Bounded {
			want = min(want, max(s.Eligible, cur))
		}
		return want, nil // may be cur: no node for another router
	case cur <= s.Min || load > fewer*target:
		return cur, nil
	case s.BelowSince == nil && load > fewer*target*(1-ScaleDownTolerance):
		return cur, nil // not clearly fewer yet
	case s.BelowSince == nil:
		t := metav1.NewTime(now)
		return cur, &t
	case now.Sub(s.BelowSince.Time) >= s.Delay:
		return cur - 1, nil // one at a time; the next waits Delay again
	}
	return cur, s.BelowSince
}
