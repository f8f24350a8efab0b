package dns

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

// Reachable is ClusterReachable from the engagement: why the cluster cannot be engaged
// (blocked), or its phase. Messages are fixed descriptions (clusteraccess.Describe).
func Reachable(blocked *clusteraccess.State, engaged bool, st clusteraccess.State) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionClusterReachable}
	switch {
	case blocked != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, blocked.Reason, blocked.Message
	case !engaged:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "not engaged yet"
	case st.Phase == clusteraccess.PhaseReachable:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonReachable, "API server answers and the cache is synced"
	case st.Phase == clusteraccess.PhaseUnreachable:
		c.Status, c.Reason = metav1.ConditionFalse, unreachableReason(clusteraccess.Failure(st.Reason))
		c.Message = fmt.Sprintf("since %s: %s", st.Since.UTC().Format(time.RFC3339), st.Message)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonConnecting, st.Message
	}
	return c
}

// unreachableReason is the ClusterReachable reason for a failure kind.
func unreachableReason(f clusteraccess.Failure) string {
	switch f {
	case clusteraccess.FailureCredentials:
		return v1alpha1.ReasonCredentialsRefused
	case clusteraccess.FailureServer:
		return v1alpha1.ReasonServerError
	case clusteraccess.FailureBudget:
		return v1alpha1.ReasonObjectBudgetExceeded
	}
	return v1alpha1.ReasonUnreachable
}

// Ready summarises the other conditions: the cluster's source exists, it is reachable, its shards
// have ready routers, and its records are published for ready nodes.
func Ready(conds []metav1.Condition) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		Message: "DNS follows the cluster's ready ingress nodes"}
	notReady := func(what string, c *metav1.Condition) metav1.Condition {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1alpha1.ReasonNotReady, what+" is not True"
		if c != nil {
			ready.Message += ": " + c.Reason
		}
		return ready
	}
	find := func(typ string) *metav1.Condition { return meta.FindStatusCondition(conds, typ) }
	source, reach, shards, pub := find(v1alpha1.ConditionSourceAvailable), find(v1alpha1.ConditionClusterReachable),
		find(v1alpha1.ConditionShardsAvailable), find(v1alpha1.ConditionDNSPublished)
	// Present only while TLS is on (the certificates controller removes it otherwise).
	cert := find(v1alpha1.ConditionCertificateReady)
	// Present only with VIP shards (the VIP controller removes it otherwise).
	vips := find(v1alpha1.ConditionVIPsAvailable)
	switch {
	case source != nil && source.Status != metav1.ConditionTrue:
		return notReady("SourceAvailable", source)
	case reach == nil || reach.Status != metav1.ConditionTrue:
		return notReady("ClusterReachable", reach)
	case shards != nil && shards.Status != metav1.ConditionTrue:
		return notReady("ShardsAvailable", shards)
	case pub == nil || pub.Status != metav1.ConditionTrue || pub.Reason != v1alpha1.ReasonPublished:
		return notReady("DNSPublished (for ready nodes)", pub)
	case cert != nil && cert.Status != metav1.ConditionTrue:
		return notReady("CertificateReady", cert)
	case vips != nil && vips.Status != metav1.ConditionTrue:
		return notReady("VIPsAvailable", vips)
	}
	return ready
}
