package allocation

import (
	"strings"
	"testing"
)

// TestScoreCostBounded: a score is refused when its worst-case cost over the largest inputs it
// may see is past maxScoreCost, and accepted otherwise (the operator guide's example included).
func TestScoreCostBounded(t *testing.T) {
	tests := []struct {
		expr    string
		refused bool
	}{
		{goldFirst, false},
		{`shard.utilization + shard.routes`, false},
		{`shard.labels.?tier.orValue("").contains("g") ? 1 : 0`, false},
		{`"tier" in shard.labels ? 1 : 0`, false},
		{`route.hosts.size()`, false},
		{`route.hosts[0].contains(route.namespace) ? 1 : 0`, false},
		{`shard.labels["tier"] == route.labels["tier"] ? 0 : 1`, false},
		// A search of every host: a route may carry tens of thousands.
		{`"shop.example" in route.hosts ? 0 : 1`, true},
		// A default that is not a literal: the estimate does not follow it, and refuses.
		{`shard.labels.?tier.orValue(route.hosts[0] + route.hosts[1]).contains(route.hosts[2]) ? 0 : 1`, true},
		{`shard.name.matches(route.labels.?re.orValue(route.name)) ? 0 : 1`, true},
	}
	for _, tt := range tests {
		if _, err := CompileScore(tt.expr); err != nil {
			t.Errorf("%s: %v (the cost is checked at admission only)", tt.expr, err)
		}
		err := CheckScoreCost(tt.expr)
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), "estimated worst-case cost")):
			t.Errorf("%s: %v, want refused for its cost", tt.expr, err)
		case !tt.refused && err != nil:
			t.Errorf("%s: %v", tt.expr, err)
		}
	}
}
