package allocation

import (
	"strings"
	"testing"
	"time"
)

// TestReview30HTTPRoutePinnedToAnHAProxyClaim: an HTTPRoute served by the profile's Traefik shard
// is named by its tenant's HAProxy claim (admitted and Bound, see pkg/claims
// TestReview30HTTPRoutesOnAFlavourWithoutGateway). Allocation refuses it — it stops being served —
// with a reason about "its class", which an HTTPRoute has none of, and pointing at
// status.ingressClassName; it should say that HAProxy claims serve no HTTPRoute (or, better, the
// claim should not bind it and the route keep its shard).
func TestReview30HTTPRoutePinnedToAnHAProxyClaim(t *testing.T) {
	shards := []Shard{{Name: "default", Domain: "c1.z.test", Flavour: "traefik", Capacity: 1},
		{Name: "mine-a", Domain: "mine-a.c1.z.test", Flavour: "haproxy", Claim: "a/mine", Capacity: 1, RouteClass: "shardgate-shard-mine-a",
			SharesRouteSpecs: true}}
	s, _ := StrategyFor("")
	got := PlanAllocations(Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, []Route{{Kind: "HTTPRoute",
		Namespace: "a", Name: "checkout", Hosts: []string{""}, Shard: "default", Flavour: "traefik", Pin: "mine-a", Created: time.Now()}})
	a := got[0]
	if a.Rejected {
		t.Errorf("HTTPRoute a/checkout, served by shard default until its tenant's HAProxy claim named it, is refused "+
			"(no longer served) with: %s", a.Reason)
		if strings.Contains(a.Reason, "class") {
			t.Errorf("the reason speaks of the HTTPRoute's class, which it has none of")
		}
	}
}
