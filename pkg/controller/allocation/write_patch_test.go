package allocation

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestRoutePatchNamesOnlyTheSpecFieldsThatChanged: Tell gives a hostless HTTPRoute its hostnames and
// the shard's Gateway; the patch names those two and leaves the rules out, so fields of a newer
// Gateway API than the types Shardgate decodes into (kept by the API server, dropped by decoding)
// are never written back without them.
func TestRoutePatchNamesOnlyTheSpecFieldsThatChanged(t *testing.T) {
	o := &gatewayv1.HTTPRoute{Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: "web"}}}}}}}}
	want := o.DeepCopy()
	want.Spec.Hostnames = []gatewayv1.Hostname{"web-a.c1.z.test"}
	want.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "router-default"}}
	spec, ok := routePatch(routekinds.HTTPRoute{}, o, want)["spec"].(map[string]any)
	if !ok {
		t.Fatalf("patch without the spec: %v", routePatch(routekinds.HTTPRoute{}, o, want))
	}
	if _, named := spec["rules"]; named || spec["hostnames"] == nil || spec["parentRefs"] == nil || len(spec) != 2 {
		t.Errorf("spec patch %v: want hostnames and parentRefs only", spec)
	}
}
