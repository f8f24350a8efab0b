package kubectlplugin

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// review30bRoute is an allocated HTTPRoute whose shard Gateway entry carries conds.
func review30bRoute(conds ...metav1.Condition) *gatewayv1.HTTPRoute {
	allocated := map[string]string{"shardgate.io/allocation": "Allocated", "shardgate.io/shard": "default",
		"shardgate.io/hosts": "web-shop.c1.example.test"}
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: allocated},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{
			ControllerName: "traefik.io/gateway-controller",
			ParentRef: gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)),
				Name: gatewayv1.ObjectName(names.ShardGatewayName("default"))},
			Conditions: conds}}}}}
}

// TestReview30bRouterProblemsReachTheTerminalRaw: `kubectl shardgate explain` prints the shard
// Gateway's conditions of an HTTPRoute as they are. Their messages are not Shardgate's: the
// cluster's owner (or any controller it runs) writes route status, and Traefik repeats the
// tenant's own backendRef name in ResolvedRefs=False ("Cannot load HTTPBackendRef %s/%s: ...";
// Gateway API's ObjectName has a length, no pattern), so an escape sequence or a newline reaches
// the terminal of whoever explains the route (the tenant, the cluster's owner, the operator):
// it rewrites the screen or forges lines ("Routers: serving it" after a problem). Doctor quotes
// such strings (printable: TestAttackDoctorNodeNamesReachTheTerminalRaw); explain does not.
func TestReview30bRouterProblemsReachTheTerminalRaw(t *testing.T) {
	backend := "x\x1b[2K\x1b[1A\x1b[2K\rRouters:\tserving it (its status says so)\n\x1b]8;;http://evil.example/\x07y"
	route := review30bRoute(metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound",
		Message: "Cannot load HTTPBackendRef shop/" + backend + ": service not found"})
	e := Explain(routekinds.HTTPRoute{}, route, map[string]string{"default": "c1.example.test"},
		func(string) ([]string, error) { return nil, nil })
	var out bytes.Buffer
	printExplanation(&out, "HTTPRoute", e)
	for _, r := range out.String() {
		if r == 0x1b || r == 0x07 || r == '\r' {
			t.Fatalf("explain printed a terminal control character from a route's status:\n%q", out.String())
		}
	}
	lines := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "Routers:") {
			lines++
		}
	}
	if lines != 1 {
		t.Fatalf("a status message forged a line of its own:\n%s", out.String())
	}
}

// TestReview30bRouterProblemsAreUnbounded: every condition of every entry naming the shard
// Gateway is printed whole: status.parents holds 32 entries of 8 conditions with messages of up
// to 32,768 characters (more where the owner loosened the CRD), megabytes on a terminal for one
// route, where doctor and messages elsewhere are bounded.
func TestReview30bRouterProblemsAreUnbounded(t *testing.T) {
	var conds []metav1.Condition
	for _, typ := range []string{"Accepted", "ResolvedRefs", "A", "B", "C", "D", "E", "F"} {
		conds = append(conds, metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "R",
			Message: strings.Repeat("m", 4000)})
	}
	route := review30bRoute(conds...)
	for range 31 {
		route.Status.Parents = append(route.Status.Parents, route.Status.Parents[0])
	}
	e := Explain(routekinds.HTTPRoute{}, route, map[string]string{"default": "c1.example.test"},
		func(string) ([]string, error) { return nil, nil })
	var out bytes.Buffer
	printExplanation(&out, "HTTPRoute", e)
	if n := out.Len(); n > 64<<10 {
		t.Errorf("explain printed %d bytes of one route's router problems (%d lines)", n, len(e.RouterProblems))
	}
}

// TestReview30bServedWhileTheRoutersRefuseIt: explain says "Routers: serving it (its status says
// so)" for an HTTPRoute whose only entry for its shard Gateway is Accepted=False (Traefik refused
// it: NotAllowedByListeners, NoMatchingListenerHostname): Published counts any entry naming the
// Gateway, whatever its conditions. The routers say they do not serve it.
func TestReview30bServedWhileTheRoutersRefuseIt(t *testing.T) {
	route := review30bRoute(metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners",
		Message: "no listener allows it"})
	e := Explain(routekinds.HTTPRoute{}, route, map[string]string{"default": "c1.example.test"},
		func(string) ([]string, error) { return nil, nil })
	if e.Served {
		var out bytes.Buffer
		printExplanation(&out, "HTTPRoute", e)
		t.Errorf("explain says the routers serve a route they did not accept:\n%s", out.String())
	}
}
