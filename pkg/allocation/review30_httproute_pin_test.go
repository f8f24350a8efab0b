package allocation

import (
	"strings"
	"testing"
	"time"
)

// TestReview30HTTPRoutePinnedToAnHAProxyClaim: an HTTPRoute pinned to an HAProxy claim's shard.
// Claims no longer bind HTTPRoutes their routers would not serve (pkg/claims
// TestReview30HTTPRoutesOnAFlavourWithoutGateway), so no such pin is made; were one made, the
// refusal must not speak of a class, which an HTTPRoute has none of.
func TestReview30HTTPRoutePinnedToAnHAProxyClaim(t *testing.T) {
	shards := []Shard{{Name: "default", Domain: "c1.z.test", Flavour: "traefik", Capacity: 1},
		{Name: "mine-a", Domain: "mine-a.c1.z.test", Flavour: "haproxy", Claim: "a/mine", Capacity: 1, RouteClass: "shardgate-shard-mine-a",
			SharesRouteSpecs: true}}
	s, _ := StrategyFor("")
	got := PlanAllocations(Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, []Route{{Kind: "HTTPRoute",
		Namespace: "a", Name: "checkout", Hosts: []string{""}, Shard: "default", Flavour: "traefik", Pin: "mine-a", Created: time.Now()}})
	if a := got[0]; !a.Rejected || strings.Contains(a.Reason, "its class") || !strings.Contains(a.Reason, "haproxy") {
		t.Errorf("HTTPRoute a/checkout pinned to an HAProxy claim's shard: rejected %v, %q", a.Rejected, a.Reason)
	}
}
