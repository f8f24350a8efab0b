package cistatus

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// readyFrom declares what Ready adds up, in the order a cause is reported (the first one not
// True is Ready's reason). Required conditions must be there and True; the others count only
// while their owner reports them.
var readyFrom = []struct {
	typ      string
	required bool
}{
	{v1alpha1.ConditionSourceAvailable, false}, // absent until the lifecycle controller reports
	{v1alpha1.ConditionClusterReachable, true},
	{v1alpha1.ConditionShardsAvailable, false},  // absent until the shard controller reports
	{v1alpha1.ConditionDNSPublished, true},      // and Published: for ready nodes, not kept stale
	{v1alpha1.ConditionCertificateReady, false}, // present only while TLS is on
	{v1alpha1.ConditionVIPsAvailable, false},    // present only with VIP shards
	// Left out, each on purpose:
	// - DomainAssigned: while the domain is not held, DNSPublished (required) is False with the
	//   same reason and message, so it adds no cause, and Ready's message keeps naming
	//   DNSPublished, as dashboards read it.
	// - RoutesProtected: the admission policy is defence in depth; without it (an older user
	//   cluster) routes are still served and DNS still follows the routers.
	// - GatewayAPIAvailable: Gateway API is optional (a profile may turn it off, a cluster owner's
	//   own CRDs may be too old, a role may not install them); Ingresses are served and DNS
	//   follows the routers without it.
	// - RoutedIPsAssigned: routed IPs are extra addresses beside the records Ready is about; a
	//   failed move is told on its own condition and alert, not as the cluster being down.
	// - RoutesServing: the canary is an outside probe that can fail for reasons outside the
	//   cluster (a proxy, a firewall in front); it is reported, not folded into Ready.
	// - CustomStrategyApplied: when a score or extender cannot decide, the built-in strategy does;
	//   every route is still allocated and served.
	// - FlavourChangesHeld: a held change leaves the shard's old routers serving every route; it
	//   tells the operator why the new flavour has not rolled out, not that anything is down.
	// - AllocationHeld: routes already allocated stay served; it tells why new ones wait (a kind
	//   planned before cannot be read now), with the step to take.
	// - ShardsSaturated: a saturated shard still serves (slower); it is the admin's cue to add
	//   routers, and True is the bad state, unlike every condition above.
}

// Ready summarises the declared conditions (readyFrom): the cluster's source exists, it is
// reachable, its shards have ready routers, its records are published for ready nodes, and its
// certificate and VIPs are in place where it has them.
func Ready(conds []metav1.Condition) metav1.Condition {
	for _, r := range readyFrom {
		c := meta.FindStatusCondition(conds, r.typ)
		switch {
		case c == nil && !r.required:
			continue
		case c != nil && c.Status == metav1.ConditionTrue &&
			(r.typ != v1alpha1.ConditionDNSPublished || c.Reason == v1alpha1.ReasonPublished):
			continue
		}
		what := r.typ
		if r.typ == v1alpha1.ConditionDNSPublished {
			what += " (for ready nodes)"
		}
		msg := what + " is not True"
		if c != nil {
			msg += ": " + c.Reason
		}
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotReady,
			Message: msg}
	}
	return metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		Message: "DNS follows the cluster's ready ingress nodes"}
}
