package clusteraccess

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

// TestReview36UpgradeWithThePreviousRoleKeepsTheClusterObservable: a cluster registered with the
// least-privilege role of the previous release (Gateway API already on: it names the CRDs, reads
// HTTPRoutes and Gateways) has no right to list ListenerSets or ReferenceGrants. After upgrading
// Shardgate, the cache now lists both (ListenerSet as a route kind's Cached, ReferenceGrant as a
// managed kind): the cluster must still become observable (as a cluster without the ListenerSet
// CRD does), not stay unsynced for every controller. The operator guide asks for the new role
// only "before turning [Gateway API] on", not at this upgrade.
func TestReview36UpgradeWithThePreviousRoleKeepsTheClusterObservable(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	previous := roles[0]
	previous.Rules = slices.DeleteFunc(previous.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "listenersets") || slices.Contains(r.Resources, "listenersets/status") ||
			slices.Contains(r.Resources, "referencegrants")
	})
	for _, role := range roles {
		if err := cp.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "previous"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: previous.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "previous"}}}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.Kubeconfig("previous")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngager(Options{RouteKinds: routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}},
		Log: logr.Discard(), ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil {
		t.Fatal(err)
	}
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
