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
	named := func(s string) bool {
		return strings.Contains(next, s+",") || strings.Contains(next, s+")") ||
			strings.Contains(next, "="+s)
	}
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

// TestAttackHLoadNotReadyStepDescribesOneNode: the commit says "pasteable next steps name every
// node", and the cordon step does (kubectl uncordon NODES), but the NotReady and NoExecuteTaint
// steps still paste `kubectl describe node NODE` with the first node only, while the finding names
// several: at 3 a.m. the operator looks at one dead node of three.
func TestAttackHLoadNotReadyStepDescribesOneNode(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable))
	ci.Status.Shards[0].ReadyNodes = []string{"node-1"}
	ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "node-2", Reason: v1alpha1.NodeNotReady},
		{Name: "node-3", Reason: v1alpha1.NodeNotReady}, {Name: "node-4", Reason: v1alpha1.NodeNoExecuteTaint},
		{Name: "node-5", Reason: v1alpha1.NodeNoExecuteTaint}}
	ci.Status.Shards[0].NodesLeftOutCount = 4
	for _, f := range Diagnose(ci, doctorNow, nil).Findings {
		for _, pair := range [][2]string{{"node-2", "node-3"}, {"node-4", "node-5"}} {
			if strings.Contains(f.Cause, pair[0]+", "+pair[1]) && !strings.Contains(f.Next, pair[1]) {
				t.Errorf("finding %q names %s and %s; its step %q looks at %s only", f.Cause, pair[0], pair[1], f.Next, pair[0])
			}
		}
	}
}
