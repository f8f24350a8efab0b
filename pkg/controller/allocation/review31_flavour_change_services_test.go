package allocation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// heldOnHeavy is a Traefik-class Ingress Shardgate allocated to shard heavy while heavy ran
// Traefik routers, routing / to Service svc.
func heldOnHeavy(ns, name, svc string) *networkingv1.Ingress {
	ing := ingress(ns, name, names.IngressClassName, "")
	ing.Spec.Rules[0].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
		Path: "/", PathType: ptrPathType(networkingv1.PathTypePrefix),
		Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}
	host := name + "." + "heavy.c1.z.test"
	ing.Spec.Rules[0].Host = host
	ing.Labels = map[string]string{v1alpha1.ShardLabel: "heavy"}
	ing.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
		v1alpha1.ShardAnnotation: "heavy", v1alpha1.HostsAnnotation: host}
	ing.CreationTimestamp = metav1.Unix(1, 0)
	return ing
}

func ptrPathType(p networkingv1.PathType) *networkingv1.PathType { return &p }

// TestReview31FlavourChangeKeepsRoutesWhoseServicesHAProxyReads (review31 finding, attacker T):
// while the cluster ran only Traefik shards no admission guard covered HAProxy's annotations or
// ExternalName Services (Traefik's TenantGuards are empty; Traefik ignores both). A tenant
// prepares, on its Traefik-era Ingresses' backend Services:
//   - `haproxy.org/route-acl` (the controller reads it from Services; it is spliced into the
//     shared frontend's use_backend rules: every tenant's host can be sent to the tenant's pods),
//   - a Service of type ExternalName naming 127.0.0.1 / the metadata service (CVE-2021-25740,
//     inert under Traefik, which refuses ExternalName Services; HAProxy proxies to it).
//
// The operator then changes shard heavy from traefik to haproxy in place. keeps() keeps both
// Ingresses on heavy, so the HAProxy routers now read the Services; the admission policy that
// arrives with the HAProxy shard ratchets (an unchanged old value stays). readAnnotation checks
// only the Ingress' own annotations, never those of its Services, and nothing checks the
// Services' type.
//
// Expected: on a shard whose routers read Service annotations / proxy ExternalName Services,
// an Ingress kept there by the flavour change whose backends carry a guarded annotation or are
// ExternalName is refused with a reason (as the Ingress-annotation case is).
func TestReview31FlavourChangeKeepsRoutesWhoseServicesHAProxyReads(t *testing.T) {
	specs := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})
	spec := &v1alpha1.ClusterIngressSpec{Shards: specs}
	acl := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "grab",
		Annotations: map[string]string{"haproxy.org/route-acl": "hdr(host) -m reg .*"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "grab"}}}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, acl, ext,
		heldOnHeavy("team", "grab", "grab"), heldOnHeavy("team", "ext", "ext"))
	_, routes, _, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(), spec, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := allocShards(context.Background(), user.Client, specs, "c1.z.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := allocation.StrategyFor("")
	got := map[string]allocation.Allocation{}
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, routes) {
		got[a.Name] = a
	}
	if len(got) != 2 {
		t.Fatalf("plan %+v", got)
	}
	for name, why := range map[string]string{
		"grab": "its Service team/grab carries haproxy.org/route-acl, which heavy's HAProxy routers splice into the frontend every tenant shares",
		"ext":  "its Service team/ext is of type ExternalName (localhost), which heavy's HAProxy routers would proxy to",
	} {
		if a := got[name]; !a.Rejected {
			t.Errorf("team/%s kept on shard %s (route class %q) after heavy became haproxy: %s", name, a.Shard, a.RouteClass, why)
		}
	}
}
