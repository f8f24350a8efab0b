package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestCanaryHTTPRouteOfGatewayServedShards: where the shards' routers serve their Gateways, each
// Traefik shard's canary has an HTTPRoute of its own, for the Gateway's canary host only, attached
// to the shard's Gateway and sent to the canary Service by port number; HAProxy's routers serve no
// Gateway, so its shard has none; without Gateway API there is none.
func TestCanaryHTTPRouteOfGatewayServedShards(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "hp", Flavour: v1alpha1.FlavourHAProxy}})
	kinds := routekinds.Registry{routekinds.Ingress{}, routekinds.HTTPRoute{}}
	routes := func(gateway bool) map[string]*gatewayv1.HTTPRoute {
		objs, err := DesiredObjects(DesiredInput{RouteKinds: kinds, ClusterDomain: "c1.z", TTL: 60, Shards: shards,
			ShardgateUser: "u", Canary: true, GatewayAPI: gateway, AdmissionPolicy: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*gatewayv1.HTTPRoute{}
		for _, o := range objs {
			if o.GetKind() == "HTTPRoute" {
				r := &gatewayv1.HTTPRoute{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err != nil {
					t.Fatal(err)
				}
				out[r.Labels[v1alpha1.ShardLabel]] = r
			}
		}
		return out
	}
	got := routes(true)
	r := got["default"]
	if len(got) != 1 || r == nil {
		t.Fatalf("canary HTTPRoutes %v, want the Traefik shard's only", got)
	}
	rule := r.Spec.Rules[0]
	if r.Namespace != names.Namespace || len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "shardgate-canary-gateway.c1.z" ||
		string(r.Spec.ParentRefs[0].Name) != names.ShardGatewayName("default") ||
		*rule.Matches[0].Path.Value != (Traefik{}).Canary().Path || *rule.Matches[0].Path.Type != gatewayv1.PathMatchExact ||
		string(rule.BackendRefs[0].Name) != names.CanaryName("default") ||
		*rule.BackendRefs[0].Port != (Traefik{}).Canary().Port {
		t.Fatalf("canary HTTPRoute %+v", r)
	}
	if got := routes(false); len(got) != 0 {
		t.Errorf("canary HTTPRoutes without Gateway API: %v", got)
	}
}
