package claims

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
)

// TestReview40GRPCRoutesUnboundSaysHTTPRoute: the operator at 3 a.m. (and the tenant reading
// their claim). The reconciler wires WhyNoGRPCRoutes to the second answer of render.ClaimLimits,
// which was written for HTTPRoutes: for a flavour without a Gateway controller it says
// "haproxy routers serve no HTTPRoute". A HAProxy claim naming an Ingress and a GRPCRoute then reads
// "its GRPCRoutes are not bound: haproxy routers serve no HTTPRoute", and one naming GRPCRoutes
// only is refused with "it names Gateway API routes only, and its "haproxy" routers would serve
// none: haproxy routers serve no HTTPRoute": the reason given is about a kind the claim does not
// name. The reason should name Gateway API routes (or the kind).
func TestReview40GRPCRoutesUnboundSaysHTTPRoute(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 4,
		Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}
	mixed := claim("a", "mixed", 0, "web")
	mixed.Spec.Flavour = v1alpha1.FlavourHAProxy
	mixed.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "rpc"}}
	only := claim("a", "only", 1)
	only.Spec.Flavour = v1alpha1.FlavourHAProxy
	only.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "rpc2"}}
	in := Input{Claims: []Claim{mixed, only}, Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, ClusterDomain: "c1.z",
		Ingresses: map[string]bool{"a/web": true}, GRPCRoutes: map[string]bool{"a/rpc": true, "a/rpc2": true},
		Ready: map[string]int32{"mixed-a": 1}}
	limits(&in)
	in.WhyNoGRPCRoutes = func(f v1alpha1.Flavour) string { _, why := render.ClaimLimits(f, true, true); return why }
	for _, r := range Decide(in).Records {
		if len(r.GRPCRoutes) != 0 {
			t.Fatalf("premise: HAProxy claim %s binds GRPCRoutes %v", r.Name, r.GRPCRoutes)
		}
		if strings.Contains(r.Message, "serve no HTTPRoute") && !strings.Contains(r.Message, "HTTPRoutes are not bound") {
			t.Errorf("claim %s (names no HTTPRoute) explains its GRPCRoutes by HTTPRoutes: %q", r.Name, r.Message)
		}
	}
}
