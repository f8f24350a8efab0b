package allocation

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/shardgate/shardgate/pkg/render"
)

// TestReview31bConfigMapOnlyAnnotationsRefuseRoutes (review31b; the operator at 3 a.m., and T/O
// who lose a route for nothing): haproxyRouteAnnotations also lists the names haproxytech's
// controller v1.11.12 reads only from its own ConfigMap (pkg/controller/global.go and
// pkg/handler/*.go read them from k.ConfigMaps.Main.Annotations only: timeout-client,
// timeout-connect, maxconn, log-format, proxy-protocol, tls-alpn, client-ca, ssl-certificate, ...);
// "which costs tenants nothing" at admission, where only new ones are refused. Allocation now
// refuses a route carrying one of them, and says the routers read it as shared configuration, which
// is false: an Ingress migrated from jcmoraisjr/haproxy-ingress (whose Ingress keys are
// ingress.kubernetes.io/timeout-client etc.) that has been served on an HAProxy shard, or is bound
// by a claim, loses its route and DNS on upgrade with a wrong reason.
// Expected: annotations the routers never read from a route (or its Services) do not refuse it.
func TestReview31bConfigMapOnlyAnnotationsRefuseRoutes(t *testing.T) {
	class := render.HAProxy{}.IngressClass().Name
	keys := []string{"ingress.kubernetes.io/timeout-client", "example.com/maxconn", "example.com/log-format",
		"ingress.kubernetes.io/proxy-protocol", "example.com/tls-alpn"}
	var ings []*networkingv1.Ingress
	for i, k := range keys {
		ing := ingress("team", "r"+string(rune('a'+i)), class, "")
		ing.Annotations = map[string]string{k: "1"}
		ings = append(ings, ing)
	}
	got, _ := planThroughCache(t, ings...)
	for _, a := range got {
		if a.Rejected || a.Shard != "heavy" {
			t.Errorf("team/%s: %+v, want allocated to heavy: its routers read that annotation from their ConfigMap only", a.Name, a)
		}
	}
	if len(got) != len(keys) {
		t.Errorf("%d allocations for %d Ingresses", len(got), len(keys))
	}
}
