package claims

import (
	"testing"

	"github.com/shardgate/shardgate/pkg/names"
)

// A claim "shardgate" in a namespace "doctor" (or "canary") is given the shard name
// shardgate-doctor (shardgate-canary): its domain, shardgate-doctor.<cluster domain>, is exactly
// the name kubectl shardgate doctor looks up for the default shard (and shardgate-canary.<domain>
// is the default shard's canary host, a label names.CanaryLabel says is reserved). The claimed
// shard's own records answer there, not the default shard's wildcard: doctor compares the
// default shard's targets with the claim's nodes (a false "answers X; published Y", or a match
// while the default wildcard is broken), and the canary requests the claim's routers.
func TestAttackDoctorClaimShardNameShadowsProbeNames(t *testing.T) {
	for _, ns := range []string{"doctor", "canary"} {
		n := shardName(Claim{Namespace: ns, Name: "shardgate"}, map[string]bool{})
		domain := names.ShardDomain(n, "c1.zone.test")
		// Doctor's probe label starts with an underscore, which no shard name has
		// (TestDoctorProbeIsNoShardName); the canary's is reserved here.
		if domain == names.CanaryHost("c1.zone.test") {
			t.Errorf("claim shardgate in namespace %s gets shard %q, domain %s: the default shard's probe name", ns, n, domain)
		}
	}
}
