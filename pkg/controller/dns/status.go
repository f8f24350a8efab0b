package dns

import (
	"fmt"
	"time"

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
