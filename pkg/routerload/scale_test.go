package routerload

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestReplicas(t *testing.T) {
	now := time.Unix(10000, 0)
	since := func(ago time.Duration) *metav1.Time { x := metav1.NewTime(now.Add(-ago)); return &x }
	load := func(util, reporting int32) v1alpha1.ShardLoadStatus {
		return v1alpha1.ShardLoadStatus{State: v1alpha1.LoadNormal, UtilizationPercent: util, ReportingRouters: reporting}
	}
	base := Scale{Min: 1, Max: 4, Target: 50, Delay: time.Minute}
	with := func(f func(*Scale)) Scale { s := base; f(&s); return s }
	tests := []struct {
		name      string
		s         Scale
		l         v1alpha1.ShardLoadStatus
		want      int32
		wantBelow bool
	}{
		{"first decision is the least", base, load(10, 1), 1, false},
		{"up at once", with(func(s *Scale) { s.Current = 1 }), load(150, 1), 3, false},
		{"up to max", with(func(s *Scale) { s.Current = 1 }), load(900, 1), 4, false},
		{"up to the eligible nodes", with(func(s *Scale) { s.Current = 1; s.Eligible = 2; s.Bounded = true }), load(900, 1), 2, false},
		{"no eligible node left: no scale-up, no scale-down either", with(func(s *Scale) {
			s.Current = 3
			s.Eligible = 1
			s.Bounded = true
		}), load(900, 3), 3, false},
		{"steady", with(func(s *Scale) { s.Current = 2 }), load(50, 2), 2, false},
		{"low starts the wait", with(func(s *Scale) { s.Current = 3 }), load(10, 3), 3, true},
		{"low, still waiting", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(30 * time.Second) }), load(10, 3), 3, true},
		{"low long enough: one goes", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(time.Minute) }), load(10, 3), 2, false},
		{"a blip up resets the wait", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(50 * time.Second) }),
			load(50, 3), 3, false},
		{"unknown load changes nothing", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(time.Hour) }),
			v1alpha1.ShardLoadStatus{State: v1alpha1.LoadUnknown}, 3, false},
		{"never below the least", with(func(s *Scale) { s.Current = 1; s.BelowSince = since(time.Hour) }), load(0, 1), 1, false},
		{"a lowered max applies at once", with(func(s *Scale) { s.Current = 4; s.Max = 2 }), load(400, 4), 2, false},
		// One ready router at 60% while two more start: the load is 0.6 of a router, not 1.8.
		{"routers not ready yet carry nothing", with(func(s *Scale) { s.Current = 3; s.Ready = 1 }), load(60, 1), 3, true},
		// Three routers at 32%: two would carry 48% each, within a tenth of the target of 50%.
		{"just fits on one fewer: no wait starts", with(func(s *Scale) { s.Current = 3 }), load(32, 3), 3, false},
		{"just fits on one fewer: a wait goes on", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(30 * time.Second) }),
			load(32, 3), 3, true},
		{"clearly fits on one fewer: the wait starts", with(func(s *Scale) { s.Current = 3 }), load(30, 3), 3, true},
		{"no longer fits on one fewer: the wait ends", with(func(s *Scale) { s.Current = 3; s.BelowSince = since(30 * time.Second) }),
			load(34, 3), 3, false},
		{"a raised least applies at once", with(func(s *Scale) { s.Current = 1; s.Min = 3; s.Max = 2 }), load(0, 1), 3, false},
	}
	for _, tt := range tests {
		got, below := Replicas(tt.s, tt.l, now)
		if got != tt.want || (below != nil) != tt.wantBelow {
			t.Errorf("%s: got %d below %v, want %d below %v", tt.name, got, below, tt.want, tt.wantBelow)
		}
	}
}
