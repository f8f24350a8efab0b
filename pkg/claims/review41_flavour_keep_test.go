package claims

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview41ClaimOfAnotherFlavourKeepsGatewayRoutesWhileUnreadable: who: T (its claim admitted
// under the previous release, which let a claim of a flavour other than the cluster's default
// bind Gateway API routes: review40's TestReview40ClaimOfAnotherFlavourBindsGRPCRoutes) together
// with any window where the kind is not served to Shardgate (O's role, an upgrade applying the
// new role after the controller, a CRD being replaced). c7fffb4 says a claim of another flavour
// binds no Gateway API route (gatewayWhy), but keep() ignores why: while the kind is "Unreadable"
// the claim keeps the HTTPRoutes/GRPCRoutes its other-flavour routers can never serve (their
// parent Gateway is the default flavour's), status.claims and the claim's status keep naming
// them as bound, and the message contradicts itself ("cannot be read now (those it bound stay
// bound): Gateway API routes go to the cluster's default flavour's routers"). Impact: the
// documented rule fails exactly in the upgrade window, the wrong shard stays recorded for those
// routes (allocation and DNS follow status.claims once the kind is readable for a pass), and the
// operator reads a binding that is not served.
// Fix: keep only where the claim's routers would serve the kind but for its readability (keep
// nothing when runs != DefaultFlavour, i.e. when gatewayWhy's reason is the flavour's).
func TestReview41ClaimOfAnotherFlavourKeepsGatewayRoutesWhileUnreadable(t *testing.T) {
	const notServed = "the cluster does not serve HTTPRoutes to Shardgate"
	c := claim("a", "edge", 1, "site")
	c.Spec.Flavour = v1alpha1.FlavourTraefik
	c.Spec.HTTPRoutes = []corev1.LocalObjectReference{{Name: "web"}}
	// Admitted before the upgrade: a Traefik claim in an HAProxy-default cluster that bound web.
	rec := v1alpha1.ClaimRecord{Namespace: "a", Name: "edge", Shard: "edge-a", Replicas: 1, EverBound: true,
		Flavour: v1alpha1.FlavourTraefik, Ingresses: []string{"site"}, HTTPRoutes: []string{"web"}}
	in := Input{Settings: v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2,
		Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourTraefik}}},
		DefaultFlavour: v1alpha1.FlavourHAProxy, Claims: []Claim{c}, Records: []v1alpha1.ClaimRecord{rec},
		Ingresses: map[string]bool{"a/site": true}, WhyNoHTTPRoutes: func(v1alpha1.Flavour) string { return notServed },
		Unreadable: map[string]bool{"HTTPRoute": true}, Ready: map[string]int32{"edge-a": 1}, Now: t0, Grace: time.Minute}
	out := Decide(in)
	r := out.Records[0]
	if len(r.HTTPRoutes) != 0 {
		t.Errorf("a claim of another flavour than the default keeps HTTPRoutes %v bound while the kind is unreadable: %s",
			r.HTTPRoutes, r.Message)
	}
	if strings.Contains(r.Message, "stay bound): Gateway API routes go to the cluster's default flavour") {
		t.Errorf("self-contradicting message: %s", r.Message)
	}
}
