package routerload

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Defaults of ShardLoadSpec.
const (
	DefaultSaturationPercent = 80
	// Hysteresis is how far below its threshold a Saturated shard's utilization must fall before
	// it is Normal again, in percentage points.
	Hysteresis = 10
	// maxReports bounds the reports a shard's load is computed from (a user cluster can write any
	// number of Leases); the first by pod name count.
	maxReports = 256
)

// Shard is what one shard's load is decided from.
type Shard struct {
	Name string
	// Capacity is requests per second one router serves at full utilization (> 0).
	Capacity int32
	// SaturationPercent is the threshold (ShardLoadSpec.SaturationPercent, defaulted).
	SaturationPercent int32
	// ReadyRouters are the shard's ready routers.
	ReadyRouters int32
	// Reports are its routers' reports, fresh or not.
	Reports []Report
	// Previous is the state last recorded (hysteresis).
	Previous v1alpha1.ShardLoadState
}

// Observe decides a shard's load at now: the mean of its routers' fresh reports against its
// capacity. With no fresh report (or no ready router) the load is Unknown, never zero.
func Observe(s Shard, now time.Time) v1alpha1.ShardLoadStatus {
	out := v1alpha1.ShardLoadStatus{Shard: s.Name, State: v1alpha1.LoadUnknown, CapacityRequestsPerSecond: s.Capacity}
	fresh := make([]Report, 0, len(s.Reports))
	for _, r := range s.Reports {
		if r.Expires.After(now) {
			fresh = append(fresh, r)
		}
	}
	slices.SortFunc(fresh, func(a, b Report) int { return strings.Compare(a.Pod, b.Pod) })
	fresh = fresh[:min(len(fresh), maxReports)]
	var clamped []string
	var rps, in, outB, conns float64
	for _, r := range fresh {
		rps, in, outB, conns = rps+r.RequestsPerSecond, in+r.BytesInPerSecond, outB+r.BytesOutPerSecond, conns+r.OpenConnections
		if r.Clamped != "" {
			clamped = append(clamped, r.Pod+": "+r.Clamped)
		}
	}
	out.ReportingRouters = int32(len(fresh))
	out.RequestsPerSecond, out.BytesInPerSecond, out.BytesOutPerSecond = round(rps), round(in), round(outB)
	out.OpenConnections = round(conns)
	if len(clamped) > 0 {
		out.Clamped = fmt.Sprintf("figures out of bounds, clamped (%s)", strings.Join(clamped[:min(len(clamped), 3)], "; "))
	}
	if len(fresh) == 0 || s.ReadyRouters == 0 || s.Capacity <= 0 {
		return out
	}
	util := rps / float64(len(fresh)) / float64(s.Capacity) * 100
	out.UtilizationPercent = int32(min(math.Round(util), 1e6))
	out.State = v1alpha1.LoadNormal
	threshold := s.SaturationPercent
	if out.UtilizationPercent >= threshold ||
		(s.Previous == v1alpha1.LoadSaturated && out.UtilizationPercent > threshold-Hysteresis) {
		out.State = v1alpha1.LoadSaturated
	}
	return out
}

func round(x float64) int64 { return int64(math.Round(min(x, 1e15))) }

// Saturation is ShardsSaturated from the shards' loads: True naming the Saturated shards and
// their figures, False when none is (naming those whose load is unknown, which LeastUtilized
// allocates to by routes per router), Unknown when no shard's load is known.
func Saturation(loads []v1alpha1.ShardLoadStatus) (status, reason, message string) {
	var saturated, unknown []string
	for _, l := range loads {
		switch l.State {
		case v1alpha1.LoadSaturated:
			saturated = append(saturated, fmt.Sprintf("%s at %d%% of %d requests/s per router (%d requests/s, %d router(s) "+
				"reporting)", l.Shard, l.UtilizationPercent, l.CapacityRequestsPerSecond, l.RequestsPerSecond, l.ReportingRouters))
		case v1alpha1.LoadUnknown:
			unknown = append(unknown, l.Shard)
		}
	}
	note := ""
	if len(unknown) > 0 {
		note = fmt.Sprintf("; load unknown for %s (no fresh report from a ready router): LeastUtilized allocates by routes "+
			"per router while a candidate's load is unknown", strings.Join(unknown, ", "))
	}
	switch {
	case len(saturated) > 0:
		return "True", v1alpha1.ReasonSaturated, "saturated: " + strings.Join(saturated, "; ") +
			"; add routers (replicas) or shards" + note
	case len(unknown) == len(loads):
		return "Unknown", v1alpha1.ReasonLoadUnknown, strings.TrimPrefix(note, "; ")
	}
	return "False", v1alpha1.ReasonWithinCapacity, fmt.Sprintf("%d shard(s) within capacity", len(loads)-len(unknown)) + note
}

// publishStep is how far a shard's utilization must move from the recorded one (percentage
// points) before Publish records new figures.
const publishStep = 10

// Publish is what status.shardLoad records: next, except that a shard keeps its recorded figures
// while its state and reporting routers are unchanged and its utilization is within publishStep
// of the recorded one. Figures that wobble under steady load must not write the seed's status
// every few seconds per cluster; the metrics carry the live figures.
func Publish(recorded, next []v1alpha1.ShardLoadStatus) []v1alpha1.ShardLoadStatus {
	out := make([]v1alpha1.ShardLoadStatus, len(next))
	for i, n := range next {
		out[i] = n
		j := slices.IndexFunc(recorded, func(r v1alpha1.ShardLoadStatus) bool { return r.Shard == n.Shard })
		if j < 0 {
			continue
		}
		r := recorded[j]
		d := r.UtilizationPercent - n.UtilizationPercent
		if r.State == n.State && r.ReportingRouters == n.ReportingRouters && r.Clamped == n.Clamped &&
			r.CapacityRequestsPerSecond == n.CapacityRequestsPerSecond && d < publishStep && -d < publishStep {
			out[i] = r
			out[i].Replicas, out[i].BelowTargetSince = n.Replicas, n.BelowTargetSince // decisions, not figures
		}
	}
	return out
}

// Unobserved is the shards' load while no report can be read (the cluster cannot be observed):
// Unknown, without figures; the replicas of routers that follow load stay as decided.
func Unobserved(shards []v1alpha1.ShardSpec, recorded []v1alpha1.ShardLoadStatus) []v1alpha1.ShardLoadStatus {
	out := make([]v1alpha1.ShardLoadStatus, len(shards))
	for i, s := range shards {
		out[i] = v1alpha1.ShardLoadStatus{Shard: s.Name, State: v1alpha1.LoadUnknown}
		for _, r := range recorded {
			if r.Shard == s.Name {
				out[i].CapacityRequestsPerSecond, out[i].Replicas = r.CapacityRequestsPerSecond, r.Replicas
			}
		}
	}
	return out
}
