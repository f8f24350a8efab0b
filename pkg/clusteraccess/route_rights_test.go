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

	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

// TestARouteKindTheRoleDoesNotCoverIsLeftOut: a cluster registered with a role of a release that
// knew fewer route kinds (here: without GRPCRoutes) stays observable after the upgrade, serves the
// kinds its role covers, and is told which it does not serve and what to apply. A cache that
// listed GRPCRoutes there would never sync, and every controller would wait on it.
func TestARouteKindTheRoleDoesNotCoverIsLeftOut(t *testing.T) {
	e := engageWithRole(t, routekinds.Builtin(), func(previous *rbacv1.ClusterRole) {
		for i := range previous.Rules {
			previous.Rules[i].Resources = slices.DeleteFunc(previous.Rules[i].Resources,
				func(r string) bool { return strings.HasPrefix(r, "grpcroutes") })
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if ok && c.Observable() {
			var kinds []string
			for _, k := range c.RouteKinds() {
				kinds = append(kinds, k.Name())
			}
			if !slices.Equal(kinds, []string{"Ingress", "HTTPRoute"}) {
				t.Errorf("route kinds %v, want Ingress and HTTPRoute: the role covers no GRPCRoutes", kinds)
			}
			a := c.Capabilities().GatewayAPI
			if !a.Served || !strings.Contains(a.Message, "may not list GRPCRoutes") ||
				!strings.Contains(a.Message, "config/user-cluster/rbac.yaml") {
				t.Errorf("Gateway API %+v: want served, told GRPCRoutes are not and what to apply", a)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("with a role without GRPCRoutes the cluster is not observable after 60 s")
		}
	}
}

// engageWithRole engages gatewayKey (Gateway API on) on a new user API server as a user bound to
// config/user-cluster/rbac.yaml's first role as narrow leaves it: a role of an earlier release.
func engageWithRole(t *testing.T, kinds routekinds.Registry, narrow func(*rbacv1.ClusterRole)) *Engager {
	t.Helper()
	e, _, _ := engageWithRoleOpts(t, Options{RouteKinds: kinds}, narrow)
	return e
}

// engageWithRoleOpts is engageWithRole with the engager's options, returning the API server and
// the release's full role too (what the operator applies later).
func engageWithRoleOpts(t *testing.T, opts Options, narrow func(*rbacv1.ClusterRole),
) (*Engager, *framework.ControlPlane, *rbacv1.ClusterRole) {
	t.Helper()
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full := roles[0].DeepCopy()
	previous := roles[0]
	narrow(previous)
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
	opts.Log, opts.ConnectTimeout = logr.Discard(), 30*time.Second
	e, err := NewEngager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := e.Engage(gatewayKey, kc, Settings{GatewayAPI: true}); err != nil {
		t.Fatal(err)
	}
	return e, cp, full
}
