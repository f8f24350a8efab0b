package kubectlplugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/shards"
)

// TestAttackHLoadPastedStepPicksSomeClaimedShards: ShardsAvailable's message now appends the
// claimed shards without a ready router ("; N claimed shard(s) without a ready router (their
// IngressClaims say so): a: why; b: why"). withShard splits the whole message on "; " and takes
// every "<label>:" it finds, so the pasteable step of the critical NoRouterReady finding (about
// the profile's shard) also lists the tenants' claimed shards, except the first one, whose part
// starts with the count. The operator at 3 a.m. gets a command for a half-arbitrary set of shards:
// the outage's shard plus some tenants' claims (which doctor lists separately as warnings), and
// one claimed shard silently missing.
func TestAttackHLoadPastedStepPicksSomeClaimedShards(t *testing.T) {
	specs := []v1alpha1.ShardSpec{{Name: "default"},
		{Name: "shop-a", Claim: "a/shop"}, {Name: "shop-b", Claim: "b/shop"}, {Name: "shop-c", Claim: "c/shop"}}
	obs := map[string]shards.RouterObservation{"default": {Deployed: true},
		"shop-a": {Deployed: true}, "shop-b": {Deployed: true}, "shop-c": {Deployed: true}}
	cond := shards.Availability(specs, obs)
	if cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonNoRouterReady {
		t.Fatalf("setup: %+v", cond)
	}
	d := Diagnose(doctorCluster(cond), doctorNow, nil)
	var next string
	for _, f := range d.Findings {
		if f.Message == cond.Message {
			next = f.Next
		}
	}
	if next == "" {
		t.Fatalf("no ShardsAvailable finding: %+v", d.Findings)
	}
	named := func(s string) bool { return strings.Contains(next, s+",") || strings.Contains(next, s+")") ||
		strings.Contains(next, "="+s) }
	if !named("default") {
		t.Errorf("the outage's shard is not in the step: %q", next)
	}
	var claimed []string
	for _, s := range []string{"shop-a", "shop-b", "shop-c"} {
		if named(s) {
			claimed = append(claimed, s)
		}
	}
	if len(claimed) != 0 {
		t.Errorf("message %q\nthe critical finding's step %q also names claimed shards %v (not shop-a): "+
			"the profile's outage and tenants' claims mixed, one claim left out", cond.Message, next, claimed)
	}
}
