package clusteraccess

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

// TestReview37AppliedRoleIsNeverNoticed (review37 finding, fails on purpose): the operator at
// 3 a.m. reads GatewayAPIAvailable "Shardgate may not list GRPCRoutes in this cluster (apply this
// release's config/user-cluster/rbac.yaml): they are not served", applies the role, and nothing
// changes: the list right is probed at first contact only, so GRPCRoutes stay unserved (and the
// message stays) until something else re-engages the cluster (a kubeconfig rotation, a profile's
// gatewayAPI flip, a restart of the controller), which neither the message nor the operator guide
// says. Meanwhile the tenants' GRPCRoutes attached to the parent get no status at all.
func TestReview37AppliedRoleIsNeverNoticed(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full := roles[0].DeepCopy()
	previous := roles[0]
	for i := range previous.Rules {
		previous.Rules[i].Resources = slices.DeleteFunc(previous.Rules[i].Resources,
			func(r string) bool { return strings.HasPrefix(r, "grpcroutes") })
	}
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
	e, err := NewEngager(Options{RouteKinds: routekinds.Builtin(), Log: logr.Discard(), ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil {
		t.Fatal(err)
	}
	c := observable(t, e)
	if !strings.Contains(c.Capabilities().GatewayAPI.Message, "may not list GRPCRoutes") {
		t.Fatalf("precondition: told %q", c.Capabilities().GatewayAPI.Message)
	}
	// The operator applies this release's role, as told.
	live := &rbacv1.ClusterRole{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(full), live); err != nil {
		t.Fatal(err)
	}
	live.Rules = full.Rules
	if err := cp.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if ok && c.Observable() && c.RouteKinds().For("GRPCRoute") != nil {
			return
		}
	}
	c, _ = e.Get(gatewayKey)
	var kinds []string
	for _, k := range c.RouteKinds() {
		kinds = append(kinds, k.Name())
	}
	t.Errorf("60 s after the operator applied the role the message asked for, the cluster's kinds are still %v and "+
		"GatewayAPIAvailable still says %q: want GRPCRoutes served once the role allows them (or the message to say "+
		"what else it takes)", kinds, c.Capabilities().GatewayAPI.Message)
}
