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

// review38WithoutListenerSets is a role of the release before ListenerSets: "an older
// least-privilege role serves everything but ListenerSets" (docs/security.md), a supported state
// that lasts (ListenerSetUnavailable, its list paths in Capabilities.Forbidden for good).
func review38WithoutListenerSets(r *rbacv1.ClusterRole) {
	for i := range r.Rules {
		r.Rules[i].Resources = slices.DeleteFunc(r.Rules[i].Resources, func(s string) bool {
			return strings.HasPrefix(s, "listenersets") || strings.HasPrefix(s, "referencegrants")
		})
	}
	r.Rules = slices.DeleteFunc(r.Rules, func(p rbacv1.PolicyRule) bool {
		return len(p.Resources) == 0 && len(p.NonResourceURLs) == 0
	})
}

// TestReview38TransientHTTPRoute403NeverRecoversWithoutListenerSets (review38 finding, fails on
// purpose): cc6026b turns Gateway API off for a whole engagement when listing HTTPRoutes is
// refused at first contact, and rightsLoop re-engages only once *every* forbidden path may be
// listed. In a cluster whose role lawfully lacks ListenerSets (ListenerSetUnavailable: their paths
// are in Capabilities.Forbidden for good), one transient 403 on httproutes at an engagement's
// first contact (the role re-applied by delete+create at that moment, a controller restart or
// kubeconfig rotation meeting it) is never recovered from: HTTPRoutes are allowed again 1 s
// later, the rights loop keeps waiting for ListenerSets that will never be allowed, and the
// cluster keeps no Gateway API (routers re-rendered without their Gateway provider: every
// HTTPRoute and GRPCRoute of the cluster unserved) until something else re-engages it.
func TestReview38TransientHTTPRoute403NeverRecoversWithoutListenerSets(t *testing.T) {
	e, cp, full := engageWithRoleOpts(t, Options{RouteKinds: routekinds.Builtin(), RightsInterval: time.Second},
		func(r *rbacv1.ClusterRole) {
			review38WithoutListenerSets(r)
			for i := range r.Rules { // the moment of the 403
				r.Rules[i].Resources = slices.DeleteFunc(r.Rules[i].Resources,
					func(s string) bool { return strings.HasPrefix(s, "httproutes") })
			}
			r.Rules = slices.DeleteFunc(r.Rules, func(p rbacv1.PolicyRule) bool {
				return len(p.Resources) == 0 && len(p.NonResourceURLs) == 0
			})
		})
	ctx := context.Background()
	c := observable(t, e)
	if c.Capabilities().GatewayAPI.Served {
		t.Fatalf("precondition: Gateway API served with httproutes forbidden: %+v", c.Capabilities().GatewayAPI)
	}
	// A second later the role is whole again: the lasting role, without ListenerSets.
	lasting := full.DeepCopy()
	review38WithoutListenerSets(lasting)
	live := &rbacv1.ClusterRole{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(full), live); err != nil {
		t.Fatal(err)
	}
	live.Rules = lasting.Rules
	if err := cp.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		c, ok := e.Get(gatewayKey)
		if ok && c.Observable() && c.Capabilities().GatewayAPI.Served && c.RouteKinds().For("HTTPRoute") != nil {
			return
		}
	}
	c, _ = e.Get(gatewayKey)
	t.Errorf("30 s (30 rights intervals) after HTTPRoutes may be listed again, Gateway API is still %q (%s): the rights "+
		"loop waits for ListenerSets too, which this role never allows", c.Capabilities().GatewayAPI.Reason,
		c.Capabilities().GatewayAPI.Message)
}
