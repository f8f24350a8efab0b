package allocation

import (
	"testing"
)

// TestAttackLoadScoreIsNotDeterministic: Strategies promise the same pick for the same state
// (a restarted controller decides as the old one would have), and the score compiles and
// validates any CEL, including macros that iterate a map (labels): CEL iterates a Go map in Go's
// random order, so the same route and candidates go to different shards from one pass to the next.
func TestAttackLoadScoreIsNotDeterministic(t *testing.T) {
	s, err := CompileScore(`shard.name == "b" ? 1 : (shard.labels.map(k, k)[0] == "a" ? 0 : 2)`)
	if err != nil {
		return // fixed: comprehension macros are refused, so no score iterates a map
	}
	labels := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		labels[k] = "x"
	}
	cands := []ShardLoad{{Name: "a", Labels: labels, Capacity: 1}, {Name: "b", Capacity: 1}}
	var f Fallbacks
	st := Scored(s, leastRoutes{}, &f)
	r := Route{Kind: "Ingress", Namespace: "ns", Name: "web"}
	seen := map[string]int{}
	for range 200 {
		seen[st.Pick(r, cands)]++
	}
	if len(seen) > 1 {
		t.Errorf("the same route and candidates were given different shards: %v (fallbacks %+v)", seen, f)
	}
}
