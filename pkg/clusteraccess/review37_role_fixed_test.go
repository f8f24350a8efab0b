package clusteraccess

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview37AppliedRoleIsNeverNoticed (review37 finding, fails on purpose): the operator at
// 3 a.m. reads GatewayAPIAvailable "Shardgate may not list GRPCRoutes in this cluster (apply this
// release's config/user-cluster/rbac.yaml): they are not served", applies the role, and nothing
// changes: the list right is probed at first contact only, so GRPCRoutes stay unserved (and the
// message stays) until something else re-engages the cluster (a kubeconfig rotation, a profile's
// gatewayAPI flip, a restart of the controller), which neither the message nor the operator guide
// says. Meanwhile the tenants' GRPCRoutes attached to the parent get no status at all.
func TestReview37AppliedRoleIsNeverNoticed(t *testing.T) {
	// RightsInterval shortened: the test waits for the re-check, not for its default.
	e, cp, full := engageWithRoleOpts(t, Options{RouteKinds: routekinds.Builtin(), RightsInterval: time.Second},
		func(previous *rbacv1.ClusterRole) {
			for i := range previous.Rules {
				previous.Rules[i].Resources = slices.DeleteFunc(previous.Rules[i].Resources,
					func(r string) bool { return strings.HasPrefix(r, "grpcroutes") })
			}
		})
	ctx := context.Background()
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
