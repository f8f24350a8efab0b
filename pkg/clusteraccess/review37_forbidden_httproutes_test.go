package clusteraccess

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/test/framework"
)

// TestReview37ForbiddenHTTPRoutesFailOpen (review37 finding, fails on purpose): the change probes
// each Gateway API cached kind's list right and leaves a forbidden one out. HTTPRoutes too: with a
// role that may not list them (the operator's least-privilege copy, an authorizer that refuses at
// first contact) the HTTPRoute kind is dropped from the cluster's kinds, and with it the admission
// policy's httproutes rules and the Gateway guard (both HTTPRoute's Protected/Guards). Yet Gateway
// API stays "served", so every shard still gets its Gateway, and render.AllocatedRouteKinds adds
// HTTPRoute to its listeners whatever the cluster's kinds are. T may then attach an HTTPRoute
// straight to shardgate-system/router-<shard> for any host, or create a Gateway of a shard's class
// in its own namespace: served by the routers, nothing allocating or refusing it. Before the change
// such a cluster never synced its cache (fail closed); now it fails open.
func TestReview37ForbiddenHTTPRoutesFailOpen(t *testing.T) {
	cp := userAPIServer(t)
	ctx := context.Background()
	roles, err := framework.ReadClusterRoles("config/user-cluster/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	restricted := roles[0]
	for i := range restricted.Rules {
		restricted.Rules[i].Resources = slices.DeleteFunc(restricted.Rules[i].Resources,
			func(r string) bool { return strings.HasPrefix(r, "httproutes") })
	}
	for _, role := range roles {
		if err := cp.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "restricted"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: restricted.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.Kubeconfig("restricted")
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
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if !(ok && c.Observable()) {
			if time.Now().After(deadline) {
				t.Fatalf("not observable after 60 s")
			}
			continue
		}
		kinds := c.RouteKinds()
		a := c.Capabilities().GatewayAPI
		listenersTake := render.AllocatedRouteKinds(kinds)
		objs, err := render.AdmissionPolicy("shardgate", kinds, render.TenantGuards{})
		if err != nil {
			t.Fatal(err)
		}
		policy, _ := json.Marshal(objs[0].Object["spec"].(map[string]any)["matchConstraints"])
		var names []string
		for _, k := range kinds {
			names = append(names, k.Name())
		}
		t.Logf("kinds %v; Gateway API %+v; listeners take %v", names, a, listenersTake)
		if a.RoutersServe() && !strings.Contains(string(policy), `"httproutes"`) {
			t.Errorf("shard Gateways are rendered (RoutersServe) and their listeners take %s, but the admission policy "+
				"guards no httproutes (rules %s): T attaches an HTTPRoute to a shard's Gateway by hand for any host",
				string(listenersTake[0].Kind), policy)
		}
		if a.RoutersServe() && !strings.Contains(string(policy), `"gateways"`) {
			t.Errorf("shard Gateways are rendered but the admission policy guards no gateways: T creates a Gateway of a " +
				"shard's class in its own namespace, served by that shard's routers")
		}
		return
	}
}
