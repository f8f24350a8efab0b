package shards

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

func attack3Ingress(ns, name, path string, pt networkingv1.PathType) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("shardgate-haproxy"), Rules: []networkingv1.IngressRule{{
			Host: "t.c1.z", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(pt),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
						Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
}

// TestAttack3HAProxyLongPathAdmitted: the path of TestAttack3HAProxyLongPathSplitsMapRow
// (pkg/routekinds), plain letters ending in another tenant's host, which HAProxy's 16384-byte line
// buffer splits into a map row of its own for that host, is admitted by the real API server with
// the policy for a cluster with an HAProxy shard.
func TestAttack3HAProxyLongPathAdmitted(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ns := controllertest.Namespace(t, c)
	haproxyPolicy(t, c, ns)
	path := "/" + strings.Repeat("a", 16383-len("t.c1.z")-1) + "victim.c1.z/"
	if err := c.Create(context.Background(), attack3Ingress(ns, "long", path, networkingv1.PathTypeExact)); err == nil {
		t.Errorf("a tenant's Ingress with a %d-byte path ending in another tenant's host is admitted in a cluster with "+
			"an HAProxy shard: HAProxy reads its map row as two, the second routing victim.c1.z/ to the tenant", len(path))
	}
}

// TestAttack3HAProxyUnicodeSpaceAdmissionDisagreesWithAllocation: the policy's CEL class \s is
// RE2's ASCII one and \x00-\x1f\x7f misses C1 controls, while Refusal uses unicode.IsSpace and
// unicode.IsControl: a path with U+0085, U+00A0 or U+2028 is admitted, then refused by allocation
// (a route T changed in place is dropped without the API server saying why, and the two guards
// the docs describe as one disagree).
func TestAttack3HAProxyUnicodeSpaceAdmissionDisagreesWithAllocation(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ns := controllertest.Namespace(t, c)
	haproxyPolicy(t, c, ns)
	for i, r := range []string{"\u0085", "\u00a0", "\u2028", "\u0080"} {
		ing := attack3Ingress(ns, "u"+strings.Repeat("x", i+1), "/a"+r+"b", networkingv1.PathTypePrefix)
		err := c.Create(context.Background(), ing)
		refused := (routekinds.Ingress{}).Refusal(ing)
		if (err == nil) != (refused == "") {
			t.Errorf("path with %U: admission %v, allocation's Refusal %q: they disagree", []rune(r)[0], err, refused)
		}
	}
}
