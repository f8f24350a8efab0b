package clusterid

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// claim is ns/name's claim with standings, created t0 plus created seconds (smaller is older).
func claim(name string, created int, standings ...Standing) Claim {
	c := Claim{Key: types.NamespacedName{Namespace: "ns", Name: name},
		Created: metav1.NewTime(t0.Add(time.Duration(created) * time.Second))}
	for _, s := range standings {
		switch s {
		case Holds:
			c.Held = true
		case Publishes:
			c.Published, c.ShardDomains = true, []string{"x.z"} // the same records in every test claim
		case Requests:
			c.Requested = true
		}
	}
	return c
}

func TestHolder(t *testing.T) {
	both := claim("both", 5, Holds)
	both.Published, both.Requested = true, true
	for _, tt := range []struct {
		name   string
		claims []Claim
		want   string // "" when nobody
	}{
		{"nobody", nil, ""},
		{"no standing is no claim", []Claim{claim("x", 0, None)}, ""},
		{"the oldest requester", []Claim{claim("new", 9, Requests), claim("old", 1, Requests)}, "old"},
		{"requesters of one age: by namespace/name", []Claim{claim("b", 1, Requests), claim("a", 1, Requests)}, "a"},
		{"the status holder keeps it against an older newcomer", []Claim{claim("older", 0, Requests),
			claim("holder", 9, Holds)}, "holder"},
		{"a status holder beats an older publisher", []Claim{claim("publisher", 0, Publishes), claim("holder", 9,
			Holds)}, "holder"},
		{"a publisher blocks an older requester", []Claim{claim("older", 0, Requests), claim("publisher", 9,
			Publishes)}, "publisher"},
		{"two publishers: the oldest", []Claim{claim("p2", 3, Publishes), claim("p1", 2, Publishes)}, "p1"},
		{"two status holders (never happens): the oldest", []Claim{claim("h2", 3, Holds), claim("h1", 2, Holds)}, "h1"},
		{"two status holders of one age: by namespace/name", []Claim{claim("hb", 2, Holds), claim("ha", 2, Holds)},
			"ha"},
		{"of one age in two namespaces: by namespace first", []Claim{claim("a", 1, Requests),
			{Key: types.NamespacedName{Namespace: "aa", Name: "z"}, Created: metav1.NewTime(t0.Add(time.Second)),
				Requested: true}}, "z"},
		{"the strongest standing counts", []Claim{claim("holder", 0, Holds), both}, "holder"},
		{"a claim with every standing holds", []Claim{claim("r", 0, Requests), claim("p", 0, Publishes), both}, "both"},
	} {
		got, ok := Holder(tt.claims)
		if (tt.want == "") == ok || (ok && got.Key.Name != tt.want) {
			t.Errorf("%s: holder %v (%v), want %q", tt.name, got.Key, ok, tt.want)
		}
		// Every claimant's reconcile lists the others in its own order: the decision must not
		// depend on it.
		rev := make([]Claim, len(tt.claims))
		for i, c := range tt.claims {
			rev[len(rev)-1-i] = c
		}
		if again, ok2 := Holder(rev); ok2 != ok || again.Key != got.Key {
			t.Errorf("%s: reversed order gives %v, not %v", tt.name, again.Key, got.Key)
		}
	}
}
