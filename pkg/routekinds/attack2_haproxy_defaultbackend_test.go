package routekinds

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/allocation"
)

// TestAttack2HAProxyTellKeepsDefaultBackend: haproxytech's controller makes an Ingress's
// spec.defaultBackend the default_backend of the shard's shared http and https frontends
// (pkg/ingress/ingress.go Update -> service.SetDefaultBackend edits both frontends, then
// reloads): every request the host maps do not route — a host not (or no longer) allocated,
// another tenant's rejected or moving route, any name under the cluster's wildcard DNS — reaches
// T's Service, over HTTPS with the cluster's wildcard certificate. Shardgate allocates such an
// Ingress to an HAProxy shard and Tell keeps spec.defaultBackend, also when it turns a
// default-backend-only Ingress into a rule under its default host (where the backend is then
// served twice: by the rule, and for every host). The admission policy does not look at it either
// (TestAttack2HAProxyDefaultBackendTakesEveryUnroutedHost in pkg/controller/shards).
func TestAttack2HAProxyTellKeepsDefaultBackend(t *testing.T) {
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	a := allocation.Allocation{Kind: "Ingress", Namespace: "team", Name: "web", Shard: "heavy", Domain: "heavy.c1.z",
		Hosts: []string{"web-team.heavy.c1.z"}, RouteClass: "shardgate-shard-heavy", SharesRouteSpecs: true}
	for name, spec := range map[string]networkingv1.IngressSpec{
		"rules and a default backend": {IngressClassName: ptr.To("shardgate-haproxy"), DefaultBackend: &backend,
			Rules: []networkingv1.IngressRule{{Host: "web-team.heavy.c1.z", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
					PathType: ptr.To(networkingv1.PathTypePrefix), Backend: backend}}}}}}},
		"a default backend only": {IngressClassName: ptr.To("shardgate-haproxy"), DefaultBackend: &backend},
	} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: spec}
		if len(spec.Rules) > 0 {
			// Fixed by refusing it: the planner never allocates it (Refusal), so no router serves it.
			if (Ingress{}).Refusal(ing) == "" {
				t.Errorf("%s: not refused", name)
			}
			continue
		}
		got, _ := Ingress{}.Tell(ing, a)
		if want := got.(*networkingv1.Ingress); want.Spec.DefaultBackend != nil {
			t.Errorf("%s: allocated to HAProxy shard heavy with spec.defaultBackend kept: its routers make %s/%s the "+
				"default backend of the shared frontends (every unrouted host)", name, ing.Namespace, backend.Service.Name)
		}
	}
}
