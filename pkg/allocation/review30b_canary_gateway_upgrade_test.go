package allocation

import (
	"testing"
	"time"
)

// TestReview30bUpgradeRejectsAHeldGatewayCanaryHost: shardgate-canary-gateway.<shard domain> was a
// host like any other before bc86aba reserved it. A tenant's Ingress allocated to it by the
// previous release (it holds the host: shardgate.io/hosts, the shard label) is rejected on the
// first pass after the upgrade, so its routers drop it: the tenant's site goes down because the
// operator upgraded, with nothing in the release notes, operator guide or a condition telling
// anyone beforehand (the previous release did not reserve it). A host a route already holds
// should stay served (and the shard's Gateway canary be skipped, or reported, while it is), as
// allocation keeps holdings elsewhere.
func TestReview30bUpgradeRejectsAHeldGatewayCanaryHost(t *testing.T) {
	shards := []Shard{{Name: "default", Domain: "c1.z.test", Flavour: "traefik", Capacity: 10}}
	s, _ := StrategyFor("")
	host := "shardgate-canary-gateway.c1.z.test"
	got := PlanAllocations(Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, []Route{{Kind: "Ingress",
		Namespace: "shop", Name: "web", Hosts: []string{host}, Shard: "default", HeldHosts: []string{host}, Flavour: "traefik",
		Created: time.Now().Add(-24 * time.Hour)}})
	if a := got[0]; a.Rejected {
		t.Errorf("an Ingress serving %s before the upgrade is rejected after it (its routes dropped): %s", host, a.Reason)
	}
}
