package shards

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
)

// TestGatewayAPIAvailable: True while Gateway API routes can be served (ListenerSets or not),
// False with the engagement's reason otherwise, Unknown before the first contact.
func TestGatewayAPIAvailable(t *testing.T) {
	v141 := gatewayapi.Decide(gatewayapi.Input{Enabled: true, Live: map[string]gatewayapi.LiveCRD{
		"gatewayclasses.gateway.networking.k8s.io": {Served: []string{"v1"}},
		"gateways.gateway.networking.k8s.io":       {Served: []string{"v1"}},
		"httproutes.gateway.networking.k8s.io":     {Served: []string{"v1"}},
	}}).Availability
	installed := gatewayapi.Decide(gatewayapi.Input{Enabled: true}).Availability
	disabled := gatewayapi.Decide(gatewayapi.Input{}).Availability
	forbidden := gatewayapi.Refused(v1alpha1.ReasonGatewayAPIForbidden, "HTTP 403")
	for name, tc := range map[string]struct {
		a      gatewayapi.Availability
		status metav1.ConditionStatus
		reason string
	}{
		"installed":            {installed, metav1.ConditionTrue, v1alpha1.ReasonGatewayAPIInstalled},
		"no ListenerSet":       {v141, metav1.ConditionTrue, v1alpha1.ReasonListenerSetUnavailable},
		"disabled":             {disabled, metav1.ConditionFalse, v1alpha1.ReasonGatewayAPIDisabled},
		"forbidden":            {forbidden, metav1.ConditionFalse, v1alpha1.ReasonGatewayAPIForbidden},
		"before first contact": {gatewayapi.Availability{}, metav1.ConditionUnknown, v1alpha1.ReasonConnecting},
	} {
		c := GatewayAPIAvailable(tc.a)
		if c.Type != v1alpha1.ConditionGatewayAPIAvailable || c.Status != tc.status || c.Reason != tc.reason || c.Message == "" {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// TestGatewayAPIAvailableIsPostedAndStored: the shard controller posts what the engagement found,
// beside RoutesProtected, and the seed's API server takes it (reason and message within the
// condition schema); a re-engagement that finds otherwise (the profile turned Gateway API off) is
// the next post.
func TestGatewayAPIAvailableIsPostedAndStored(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	key := newCI(t, seed.Client, ns)
	user := controllertest.UserCluster(access, key)
	user.Caps = clusteraccess.Capabilities{AdmissionPolicy: true, Version: "v1.37",
		GatewayAPI: gatewayapi.Decide(gatewayapi.Input{Enabled: true}).Availability}
	controllertest.Reconcile(t, r, key, 1)
	if c := conditionOf(t, seed.Client, key, v1alpha1.ConditionGatewayAPIAvailable); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonGatewayAPIInstalled {
		t.Fatalf("GatewayAPIAvailable stored: %+v", c)
	}
	user.Caps.GatewayAPI = gatewayapi.Decide(gatewayapi.Input{}).Availability
	controllertest.Reconcile(t, r, key, 1)
	if c := conditionOf(t, seed.Client, key, v1alpha1.ConditionGatewayAPIAvailable); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonGatewayAPIDisabled {
		t.Fatalf("GatewayAPIAvailable after Gateway API was turned off: %+v", c)
	}
}
