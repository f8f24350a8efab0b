package shards

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// A claimed shard is built from the profile's spec.claims (its nodeSelector, image, publishing):
// when no node matches the operator's claims.nodeSelector, or the operator's claims image cannot
// run, every claim in the cluster stays Pending/Provisioning ("shard X has no ready router yet",
// no reason the tenant could act on), and since #33 ShardsAvailable drops the claimed shards
// without a word: the cause is the operator's, and nothing the operator reads (condition,
// alert, doctor) names it. Keeping the condition True is fine; saying nothing is not.
func TestAttack33OperatorsClaimSettingsBreakEveryClaimSilently(t *testing.T) {
	profile := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}})
	claimSel := map[string]string{"node-role.kubernetes.io/tenant-ingress": ""}
	shards := append(profile,
		v1alpha1.ShardSpec{Name: "shop-team", Claim: "team/shop", NodeSelector: claimSel},
		v1alpha1.ShardSpec{Name: "blog-other", Claim: "other/blog", NodeSelector: claimSel})
	c := Availability(shards, map[string]RouterObservation{
		"default":    {Deployed: true, ReadyReplicas: 2},
		"shop-team":  {Deployed: true, NoMatchingNode: true},
		"blog-other": {Deployed: true, NoMatchingNode: true},
	})
	if !strings.Contains(c.Message, "shop-team") || !strings.Contains(c.Message, "blog-other") {
		t.Errorf("every claimed shard lacks a node matching the profile's claims.nodeSelector; ShardsAvailable %s/%s %q names none",
			c.Status, c.Reason, c.Message)
	}
}
