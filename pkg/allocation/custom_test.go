package allocation

import (
	"errors"
	"strings"
	"testing"
)

// The example: shards labelled tier=gold for namespaces labelled tier=gold, then the
// least utilized.
const goldFirst = `(route.namespaceLabels.?tier.orValue("") == "gold") == (shard.labels.?tier.orValue("") == "gold") ?
	shard.utilization : 1000 + shard.utilization`

func TestScore(t *testing.T) {
	s, err := CompileScore(goldFirst)
	if err != nil {
		t.Fatal(err)
	}
	shards := []ShardLoad{
		{Name: "a", Labels: map[string]string{"tier": "gold"}, Utilization: 70, LoadKnown: true, Capacity: 1},
		{Name: "b", Utilization: 10, LoadKnown: true, Capacity: 1},
		{Name: "c", Utilization: 10, LoadKnown: true, Capacity: 1, Routes: 1},
	}
	var f Fallbacks
	st := Scored(s, leastRoutes{}, &f)
	gold := Route{Kind: "Ingress", Namespace: "shop", Name: "web", NamespaceLabels: map[string]string{"tier": "gold"}}
	if got := st.Pick(gold, shards); got != "a" {
		t.Errorf("gold route went to %s, want a", got)
	}
	// Ties (b and c score 10) go to the fewest routes per ready router.
	if got := st.Pick(Route{Kind: "Ingress", Namespace: "blog", Name: "web"}, shards); got != "b" {
		t.Errorf("plain route went to %s, want b", got)
	}
	if f.Picks != 2 || f.Fell != 0 {
		t.Errorf("fallbacks %+v", f)
	}
	// Deterministic: the same inputs, the same pick.
	for range 20 {
		if st.Pick(gold, shards) != "a" {
			t.Fatal("not deterministic")
		}
	}
}

func TestScoreRefusedAtCompile(t *testing.T) {
	for expr, want := range map[string]string{
		`int(shard.name)`:      "", // a number only if the name is one: refused when evaluated
		`shard.name + "x"`:     "not a number",
		`"text"`:               "not a number",
		`route.hosts.size() >`: "score:",
		`secrets.get("x")`:     "undeclared reference",
		`shard.routes < 3`:     "not a number",
	} {
		_, err := CompileScore(expr)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", expr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", expr, err, want)
		}
	}
}

// TestScoreFallsBack: a score that fails (a string, a cost past the bound, a missing key) makes
// the fallback pick, and says why; it never crashes and never picks a non-candidate.
func TestScoreFallsBack(t *testing.T) {
	shards := []ShardLoad{{Name: "a", Routes: 5, Capacity: 1}, {Name: "b", Routes: 1, Capacity: 1}}
	for _, expr := range []string{
		`int(shard.name)`,
		`shard.labels["missing"] == "x" ? 1 : 2`,
		`1 / (shard.routes - shard.routes)`,
	} {
		s, err := CompileScore(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var f Fallbacks
		if got := Scored(s, leastRoutes{}, &f).Pick(Route{Kind: "Ingress", Namespace: "n", Name: "r"}, shards); got != "b" ||
			f.Fell != 1 || !strings.Contains(f.FirstProblem, "score failed for Ingress n/r") {
			t.Errorf("%s: picked %s, fallbacks %+v", expr, got, f)
		}
	}
}

func TestExtender(t *testing.T) {
	shards := []ShardLoad{{Name: "a", Routes: 5, Capacity: 1}, {Name: "b", Routes: 1, Capacity: 1}}
	r := Route{Kind: "Ingress", Namespace: "n", Name: "r"}
	for _, tc := range []struct {
		answer  string
		err     error
		want    string
		problem string
	}{
		{"a", nil, "a", ""},
		{"elsewhere", nil, "b", `answered shard "elsewhere", which is not a candidate (a, b)`},
		{"", errors.New("deadline exceeded"), "b", "deadline exceeded"},
	} {
		var f Fallbacks
		ask := func(Route, []ShardLoad) (string, error) { return tc.answer, tc.err }
		got := Extended(ask, leastRoutes{}, &f).Pick(r, shards)
		if got != tc.want || (tc.problem == "") != (f.Fell == 0) || !strings.Contains(f.FirstProblem, tc.problem) {
			t.Errorf("%q %v: picked %s, fallbacks %+v", tc.answer, tc.err, got, f)
		}
	}
}
