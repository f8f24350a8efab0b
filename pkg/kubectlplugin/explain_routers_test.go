package kubectlplugin

import (
	"bytes"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestExplainSaysWhatTheRoutersSay: an allocated route is told served only once its shard's
// routers name the shard in its status; an HTTPRoute's conditions its shard Gateway reports not
// True (a backend not found) are printed as problems; another Gateway's entries are not its.
func TestExplainSaysWhatTheRoutersSay(t *testing.T) {
	allocated := map[string]string{"shardgate.io/allocation": "Allocated", "shardgate.io/shard": "default",
		"shardgate.io/hosts": "web-shop.c1.example.test"}
	domains := map[string]string{"default": "c1.example.test"}
	none := func(string) ([]string, error) { return nil, nil }

	ing := ingress(allocated, "shardgate")
	if e := Explain(routekinds.Ingress{}, ing, domains, none); e.Served || len(e.RouterProblems) > 0 {
		t.Errorf("an Ingress without status: %+v", e)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "c1.example.test"}}
	if e := Explain(routekinds.Ingress{}, ing, domains, none); !e.Served {
		t.Errorf("an Ingress whose status names its shard: %+v", e)
	}

	parent := func(gateway string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ControllerName: "traefik.io/gateway-controller", Conditions: conds,
			ParentRef: gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(names.Namespace)), Name: gatewayv1.ObjectName(gateway)}}
	}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: allocated},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{
			parent(names.ShardGatewayName("default"),
				metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
				metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound", Message: "service shop/web not found"}),
			parent(names.ShardGatewayName("other"), metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowed"}),
		}}}}
	e := Explain(routekinds.HTTPRoute{}, route, domains, none)
	if !e.Served || len(e.RouterProblems) != 1 || e.RouterProblems[0] != "ResolvedRefs=False (BackendNotFound: service shop/web not found)" {
		t.Fatalf("%+v", e)
	}
	var out bytes.Buffer
	printExplanation(&out, "HTTPRoute", e)
	for _, want := range []string{"Routers:\tserving it", "Problem:\tResolvedRefs=False (BackendNotFound: service shop/web not found)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
