package shards

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
)

// GatewayAPIAvailable is the condition of what a cluster offers of Gateway API, as its engagement
// found it (clusteraccess.Capabilities.GatewayAPI, decided by gatewayapi.Decide): True while
// Gateway API routes can be served (ListenerSetUnavailable among its reasons), False with the
// reason otherwise; Unknown before the cluster's first contact.
func GatewayAPIAvailable(a gatewayapi.Availability) metav1.Condition {
	switch {
	case a.Reason == "":
		return condition(v1alpha1.ConditionGatewayAPIAvailable, metav1.ConditionUnknown, v1alpha1.ReasonConnecting,
			"not found out yet: it is, at the cluster's first contact")
	case a.Served:
		return condition(v1alpha1.ConditionGatewayAPIAvailable, metav1.ConditionTrue, a.Reason, a.Message)
	}
	return condition(v1alpha1.ConditionGatewayAPIAvailable, metav1.ConditionFalse, a.Reason, a.Message)
}
