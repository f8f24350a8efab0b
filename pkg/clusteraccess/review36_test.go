package clusteraccess

import (
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview36UpgradeWithThePreviousRoleKeepsTheClusterObservable: a cluster registered with the
// least-privilege role of the previous release (Gateway API already on: it names the CRDs, reads
// HTTPRoutes and Gateways) has no right to list ListenerSets or ReferenceGrants. After upgrading
// Shardgate, the cache now lists both (ListenerSet as a route kind's Cached, ReferenceGrant as a
// managed kind): the cluster must still become observable (as a cluster without the ListenerSet
// CRD does), not stay unsynced for every controller. The operator guide asks for the new role
// only "before turning [Gateway API] on", not at this upgrade.
func TestReview36UpgradeWithThePreviousRoleKeepsTheClusterObservable(t *testing.T) {
	e := engageWithRole(t, routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}},
		func(previous *rbacv1.ClusterRole) {
			previous.Rules = slices.DeleteFunc(previous.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.Resources, "listenersets") || slices.Contains(r.Resources, "listenersets/status") ||
					slices.Contains(r.Resources, "referencegrants")
			})
		})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if ok && c.Observable() {
			return
		}
		if time.Now().After(deadline) {
			var st State
			if ok {
				st = c.State()
				t.Logf("capabilities %+v synced %v", c.Capabilities().GatewayAPI, c.Synced())
			}
			t.Fatalf("with the previous release's role the cluster is not observable after 60 s: %+v", st)
		}
	}
}
