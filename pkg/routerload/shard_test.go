package routerload

import (
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestObserve(t *testing.T) {
	now := time.Unix(5000, 0)
	fresh, stale := now.Add(10*time.Second), now.Add(-time.Second)
	rep := func(pod string, rps float64, expires time.Time) Report {
		return Report{Pod: pod, RequestsPerSecond: rps, Expires: expires}
	}
	tests := []struct {
		name    string
		in      Shard
		state   v1alpha1.ShardLoadState
		util    int32
		reports int32
	}{
		{"no report is unknown, not zero", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1}, v1alpha1.LoadUnknown, 0, 0},
		{"stale reports are unknown", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1,
			Reports: []Report{rep("a", 500, stale)}}, v1alpha1.LoadUnknown, 0, 0},
		{"no ready router", Shard{Capacity: 100, SaturationPercent: 80, Reports: []Report{rep("a", 5, fresh)}},
			v1alpha1.LoadUnknown, 0, 1},
		{"mean per reporting router", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 2,
			Reports: []Report{rep("a", 30, fresh), rep("b", 50, fresh), rep("c", 900, stale)}}, v1alpha1.LoadNormal, 40, 2},
		{"at the threshold", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1,
			Reports: []Report{rep("a", 80, fresh)}}, v1alpha1.LoadSaturated, 80, 1},
		{"hysteresis keeps it", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1, Previous: v1alpha1.LoadSaturated,
			Reports: []Report{rep("a", 71, fresh)}}, v1alpha1.LoadSaturated, 71, 1},
		{"10 points below clears it", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1, Previous: v1alpha1.LoadSaturated,
			Reports: []Report{rep("a", 70, fresh)}}, v1alpha1.LoadNormal, 70, 1},
		{"below without history", Shard{Capacity: 100, SaturationPercent: 80, ReadyRouters: 1,
			Reports: []Report{rep("a", 79, fresh)}}, v1alpha1.LoadNormal, 79, 1},
	}
	for _, tt := range tests {
		tt.in.Name = "s"
		got := Observe(tt.in, now)
		if got.State != tt.state || got.UtilizationPercent != tt.util || got.ReportingRouters != tt.reports {
			t.Errorf("%s: got %+v", tt.name, got)
		}
	}
	// A cluster writing thousands of Leases: at most maxReports count, and clamped figures are said.
	var many []Report
	for i := range 2000 {
		many = append(many, Report{Pod: "p" + strings.Repeat("x", i%7) + string(rune('a'+i%26)), RequestsPerSecond: 1e7,
			Expires: fresh, Clamped: "rps"})
	}
	got := Observe(Shard{Name: "s", Capacity: 1, SaturationPercent: 80, ReadyRouters: 1, Reports: many}, now)
	if got.ReportingRouters != maxReports || got.Clamped == "" || got.UtilizationPercent != 1e6 {
		t.Errorf("many reports: %+v", got)
	}
}

func TestSaturation(t *testing.T) {
	l := func(shard string, state v1alpha1.ShardLoadState, util int32) v1alpha1.ShardLoadStatus {
		return v1alpha1.ShardLoadStatus{Shard: shard, State: state, UtilizationPercent: util, CapacityRequestsPerSecond: 20}
	}
	tests := []struct {
		loads    []v1alpha1.ShardLoadStatus
		status   string
		reason   string
		contains []string
	}{
		{[]v1alpha1.ShardLoadStatus{l("a", v1alpha1.LoadSaturated, 240), l("b", v1alpha1.LoadNormal, 5)}, "True",
			v1alpha1.ReasonSaturated, []string{"a at 240%", "add routers"}},
		{[]v1alpha1.ShardLoadStatus{l("a", v1alpha1.LoadNormal, 40), l("h", v1alpha1.LoadUnknown, 0)}, "False",
			v1alpha1.ReasonWithinCapacity, []string{"1 shard(s) within capacity", "load unknown for h"}},
		{[]v1alpha1.ShardLoadStatus{l("h", v1alpha1.LoadUnknown, 0)}, "Unknown", v1alpha1.ReasonLoadUnknown,
			[]string{"load unknown for h"}},
	}
	for _, tt := range tests {
		status, reason, msg := Saturation(tt.loads)
		if status != tt.status || reason != tt.reason {
			t.Errorf("%+v: got %s %s %q", tt.loads, status, reason, msg)
		}
		for _, c := range tt.contains {
			if !strings.Contains(msg, c) {
				t.Errorf("%+v: message %q lacks %q", tt.loads, msg, c)
			}
		}
	}
}

// TestPublish: figures that wobble keep the recorded ones (no status write); a state change, a
// router more or less, or a move of publishStep points records the new ones.
func TestPublish(t *testing.T) {
	rec := []v1alpha1.ShardLoadStatus{{Shard: "a", State: v1alpha1.LoadNormal, UtilizationPercent: 40, RequestsPerSecond: 40,
		ReportingRouters: 1}}
	wobble := []v1alpha1.ShardLoadStatus{{Shard: "a", State: v1alpha1.LoadNormal, UtilizationPercent: 45, RequestsPerSecond: 45,
		ReportingRouters: 1}}
	if got := Publish(rec, wobble); got[0].RequestsPerSecond != 40 {
		t.Errorf("a wobble was recorded: %+v", got)
	}
	for _, next := range []v1alpha1.ShardLoadStatus{
		{Shard: "a", State: v1alpha1.LoadNormal, UtilizationPercent: 50, RequestsPerSecond: 50, ReportingRouters: 1},
		{Shard: "a", State: v1alpha1.LoadSaturated, UtilizationPercent: 41, RequestsPerSecond: 41, ReportingRouters: 1},
		{Shard: "a", State: v1alpha1.LoadNormal, UtilizationPercent: 41, RequestsPerSecond: 82, ReportingRouters: 2},
	} {
		if got := Publish(rec, []v1alpha1.ShardLoadStatus{next}); got[0] != next {
			t.Errorf("%+v not recorded: %+v", next, got)
		}
	}
	if got := Publish(nil, wobble); got[0] != wobble[0] {
		t.Errorf("a first report not recorded: %+v", got)
	}
}
