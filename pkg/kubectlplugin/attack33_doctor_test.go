package kubectlplugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// A tenant's claimed shard without a ready router: since #33 ShardsAvailable judges the
// profile's shards only, so it stays True; routerFindings skips a shard with none ready ("none
// ready is ShardsAvailable's"), the canary's NoRouterReady has no step ("ShardsAvailable says
// so, first") and doctor reads no status.claims. The operator's doctor says "nothing wrong" while
// the claim's routers are down, including for causes only the operator can fix: the claims'
// nodeSelector and image are the profile's (spec.claims), and the claim tells the tenant only
// "shard X has no ready router yet", never why.
func TestAttack33ClaimedShardOutageIsInvisibleToTheOperator(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
		c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady),
		c(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable))
	ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: "default", Replicas: ptr.To[int32](2)}}
	ci.Status.Shards[0].ReadyReplicas, ci.Status.Shards[0].ReadyNodes = 2, []string{"node-1", "node-2"}
	ci.Status.Claims = []v1alpha1.ClaimRecord{{Namespace: "team", Name: "shop", Shard: "shop-team", Replicas: 2,
		Ingresses: []string{"team/shop"}, Phase: v1alpha1.ClaimPending, Reason: v1alpha1.ReasonClaimProvisioning,
		Message: "shard shop-team has no ready router yet"}}
	ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: "shop-team", Domain: "shop-team.c.zone.test"})
	ci.Status.Canaries = []v1alpha1.CanaryStatus{{Shard: "shop-team", Conditions: []metav1.Condition{
		c(v1alpha1.ConditionRoutesServing, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady)}}}
	d := Diagnose(ci, doctorNow, map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.1", "10.0.0.2"}}})
	for _, f := range d.Findings {
		if strings.Contains(f.Cause+f.Message, "shop-team") {
			return
		}
	}
	t.Errorf("claimed shard shop-team has no ready router (its IngressClaim Pending/Provisioning); doctor names it nowhere: %q", causes(d))
}

// The next step for a node left out as NotSelected names "the profile's dns.ingressNodes": no
// such field exists (dns.ingressNodeSelector); the CRD's description says the same.
func TestAttack33NotSelectedNextStepNamesARealField(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished))
	ci.Status.Shards[0].ReadyNodes = []string{"node-1"}
	ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "node-2", Reason: v1alpha1.NodeNotSelected}}
	for _, f := range Diagnose(ci, doctorNow, nil).Findings {
		if strings.Contains(f.Cause, "node-2") && !strings.Contains(f.Next, "dns.ingressNodeSelector") {
			t.Errorf("next step %q names no real profile field (dns.ingressNodeSelector)", f.Next)
		}
	}
}

// A shard with no node in its answer and no targets (never published, or the profile's
// dns.emptyTargets is Remove): doctor still says "the shard's records keep their last targets",
// telling the operator DNS still answers when it answers nothing.
func TestAttack33LeftOutMessageClaimsRecordsKeptWhenNone(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished))
	ci.Spec.DNS.EmptyTargets = v1alpha1.EmptyTargetsRemove
	ci.Status.Shards[0].ReadyNodes, ci.Status.Shards[0].Targets = nil, nil
	ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "node-1", Reason: v1alpha1.NodeCordoned}}
	for _, f := range Diagnose(ci, doctorNow, nil).Findings {
		if strings.Contains(f.Cause, "node-1") && strings.Contains(f.Message, "keep their last targets") {
			t.Errorf("the shard has no targets (status.shards[].targets empty, emptyTargets Remove), yet: %q", f.Message)
		}
	}
}

// Two nodes cordoned: the finding names both, but the pasteable next step uncordons only the
// first ("kubectl uncordon node-2"); the operator who pastes it leaves node-4 out of DNS.
func TestAttack33CordonNextStepUncordonsEveryNodeItNames(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished))
	ci.Status.Shards[0].ReadyNodes = []string{"node-1"}
	ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "node-2", Reason: v1alpha1.NodeCordoned},
		{Name: "node-4", Reason: v1alpha1.NodeCordoned}}
	for _, f := range Diagnose(ci, doctorNow, nil).Findings {
		if strings.Contains(f.Cause, "cordoned") && !strings.Contains(f.Next, "kubectl uncordon node-2 node-4") {
			t.Errorf("finding names node-2 and node-4, next step %q uncordons only one", f.Next)
		}
	}
}

// ShardsAvailable=False/NoRouterReady naming two shards: withShard pastes only the first into
// the command; the second shard's routers are never looked at by the pasted command.
func TestAttack33WithShardNamesEveryShardTheMessageNames(t *testing.T) {
	cond := c(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady)
	cond.Message = "default: no router pod is ready yet; haproxy: no router pod is ready yet"
	d := Diagnose(doctorCluster(cond), doctorNow, nil)
	if len(d.Findings) == 0 || !strings.Contains(d.Findings[0].Next, "haproxy") {
		t.Errorf("two shards without a ready router, next step %q names one", d.Findings[0].Next)
	}
}

// A bound claim's routers die: its shard's records are kept (DNSPublished=True/KeptLastTargets
// naming the claimed shard). Doctor raises that as critical, "see the shards (above)", with the
// ShardgateShardsUnavailable runbook, but ShardsAvailable is True (claimed shards are no longer
// judged), so nothing above names the shard, and the runbook says a claimed shard "never fires
// this alert". The operator is sent to a section that contradicts the finding.
func TestAttack33KeptClaimedShardPointsAtShardsThatSayNothing(t *testing.T) {
	kept := c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets)
	kept.Message = "a shard has no ready target; its last published targets are kept (emptyTargets: KeepLast): shop-team"
	ci := doctorCluster(kept, c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady),
		c(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable))
	ci.Status.Claims = []v1alpha1.ClaimRecord{{Namespace: "team", Name: "shop", Shard: "shop-team", Replicas: 1,
		Phase: v1alpha1.ClaimPending, Reason: v1alpha1.ReasonClaimProvisioning}}
	ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: "shop-team", Domain: "shop-team.c.zone.test",
		Targets: []string{"10.0.0.9"}})
	d := Diagnose(ci, doctorNow, nil)
	seenShard := false
	for _, f := range d.Findings {
		if strings.HasPrefix(f.Cause, "DNSPublished=") && strings.Contains(f.Next, "see the shards (above)") && !seenShard {
			t.Errorf("critical %q says %q, but no finding above names shard shop-team (ShardsAvailable judges no claim): %q",
				f.Cause, f.Next, causes(d))
		}
		if strings.Contains(f.Cause, "shop-team") {
			seenShard = true
		}
	}
}

// A NodePort shard spans every node its nodeSelector matches (all by default), and the profile's
// dns.ingressNodeSelector picking the edge nodes is the intended way to publish a subset. Every
// other node is then "NotSelected" in nodesLeftOut, so a healthy, Ready cluster gets a permanent
// warning ("not an ingress node ... label it") naming up to 16 workers: doctor never says
// "nothing wrong found" for it again, and the operator learns to skip these findings.
func TestAttack33HealthyNodePortClusterIsNeverClean(t *testing.T) {
	ci := doctorCluster(c(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
		c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady),
		c(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable))
	ci.Spec.Shards = []v1alpha1.ShardSpec{{Name: "default", Publishing: v1alpha1.PublishNodePort}}
	ci.Spec.DNS.IngressNodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/ingress": ""}}
	ci.Status.Shards[0].ReadyNodes = []string{"edge-1", "edge-2"}
	ci.Status.Shards[0].NodesLeftOut = []v1alpha1.NodeLeftOut{{Name: "worker-1", Reason: v1alpha1.NodeNotSelected},
		{Name: "worker-2", Reason: v1alpha1.NodeNotSelected}}
	answers := map[string]DNSAnswer{"default": {Name: "shardgate-doctor.c.zone.test", Addresses: []string{"10.0.0.1", "10.0.0.2"}}}
	if d := Diagnose(ci, doctorNow, answers); len(d.Findings) != 0 {
		t.Errorf("a healthy NodePort cluster publishing its ingress nodes, as configured, gets findings: %q", causes(d))
	}
}
