package routerload

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAttack2LoadScaleUpCountsRoutersNotYetServing: Replicas takes the load as
// UtilizationPercent × max(ReportingRouters, Current), i.e. it assumes every router it decided
// already carries its share. Right after a scale-up the new routers are Pending / starting (or
// Pending for good: no node left for the required anti-affinity), the reporting routers still
// carry the whole load at the same utilization, and the next reconcile (10 s later) multiplies it
// by the new count: 2 routers at 90% (180 router-percent, 3 routers at a 60% target) run to
// maxReplicas in four reconciles, then come down one per scaleDownDelay (35 min at 10).
func TestAttack2LoadScaleUpCountsRoutersNotYetServing(t *testing.T) {
	now := time.Unix(10000, 0)
	load := v1alpha1.ShardLoadStatus{State: v1alpha1.LoadNormal, UtilizationPercent: 90, ReportingRouters: 2}
	s := Scale{Min: 2, Max: 10, Target: 60, Delay: 5 * time.Minute, Current: 2}
	var path []int32
	for range 4 { // four reconciles, 10 s apart; the new routers have not reported yet
		s.Current, _ = Replicas(s, load, now)
		path = append(path, s.Current)
		now = now.Add(10 * time.Second)
	}
	if s.Current != 3 {
		t.Errorf("constant load of 2 routers at 90%% (3 routers at the 60%% target): replicas went %v", path)
	}
}

// TestAttack2LoadGhostReportAfterScaleDownFlaps: after a router goes (scale-down), its Lease stays
// fresh until it expires or the pod is collected (the reporter stops at SIGTERM, the router sleeps
// its preStop), so Observe counts it among the reporting routers while its last figures no longer
// hold: the remaining routers already carry its traffic. Replicas then scales back up at once
// (scale-up has no delay): 5 → 4 → 5 every scaleDownDelay under a load that 4 routers carry
// under the target.
func TestAttack2LoadGhostReportAfterScaleDownFlaps(t *testing.T) {
	now := time.Unix(20000, 0)
	rep := func(pod string, rps float64, age time.Duration) Report {
		return Report{Pod: pod, RequestsPerSecond: rps, Window: 30 * time.Second, Expires: now.Add(30*time.Second - age)}
	}
	// Before: 5 routers at 47 rps of 100 (235 in all: 4 routers at 58.75%, under the 60% target).
	before := Observe(Shard{Name: "default", Capacity: 100, SaturationPercent: 80, ReadyRouters: 5,
		Reports: []Report{rep("r1", 47, 0), rep("r2", 47, 0), rep("r3", 47, 0), rep("r4", 47, 0), rep("r5", 47, 0)}}, now)
	s := Scale{Min: 2, Max: 10, Target: 60, Delay: 5 * time.Minute, Current: 5,
		BelowSince: &metav1.Time{Time: now.Add(-5 * time.Minute)}}
	got, _ := Replicas(s, before, now)
	if got != 4 {
		t.Fatalf("setup: 235 rps over 5 routers at a 60%% target: %d routers, want 4", got)
	}
	// 20 s later: r5 is terminating, its last report still fresh; r1..r4 carry its traffic.
	now = now.Add(20 * time.Second)
	after := Observe(Shard{Name: "default", Capacity: 100, SaturationPercent: 80, ReadyRouters: 4,
		Reports: []Report{rep("r1", 58.75, 0), rep("r2", 58.75, 0), rep("r3", 58.75, 0), rep("r4", 58.75, 0),
			rep("r5", 47, 20*time.Second)}}, now)
	s.Current, s.BelowSince = 4, nil
	if got, _ := Replicas(s, after, now); got != 4 {
		t.Errorf("the same 235 rps, 4 ready routers at 58.75%% (under 60%%), the gone router's report still fresh "+
			"(%d reporting, %d%%): %d routers, want 4 (flap 5 → 4 → %d)", after.ReportingRouters, after.UtilizationPercent, got, got)
	}
}

// TestAttack2LoadEligibleDropScalesDownAtOnce: the eligible-node bound lowers the replicas at
// once, several routers in one step, without scaleDownDelay and whatever the load, unknown load
// included. Cordoning nodes for a routine drain (or a node-label change) in a cluster whose
// HostNetwork shard runs 6 routers under heavy load takes 3 of them away in one reconcile; the
// routers on the cordoned nodes were still serving (a cordon evicts nothing), and the Deployment
// picks which pods go without regard to cordons.
func TestAttack2LoadEligibleDropScalesDownAtOnce(t *testing.T) {
	now := time.Unix(30000, 0)
	for _, l := range []v1alpha1.ShardLoadStatus{
		{State: v1alpha1.LoadUnknown},
		{State: v1alpha1.LoadSaturated, UtilizationPercent: 95, ReportingRouters: 6},
	} {
		s := Scale{Min: 2, Max: 10, Eligible: 3, Target: 60, Delay: 5 * time.Minute, Current: 6}
		got, _ := Replicas(s, l, now)
		if got < s.Current-1 {
			t.Errorf("load %s at %d%%, 3 of 6 nodes cordoned: %d → %d routers in one step, without the delay",
				l.State, l.UtilizationPercent, s.Current, got)
		}
	}
}
