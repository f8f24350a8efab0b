package shards

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// review30ClaimCI is a Traefik cluster whose profile lets tenants claim HAProxy routers, with
// tenant team-a's admitted HAProxy claim.
func review30ClaimCI() *v1alpha1.ClusterIngress {
	return &v1alpha1.ClusterIngress{
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourTraefik}}),
			Claims: v1alpha1.ClaimSettings{Allowed: true, Flavours: []v1alpha1.ClaimFlavour{{Name: v1alpha1.FlavourHAProxy}}}},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", Claims: []v1alpha1.ClaimRecord{{Namespace: "team-a", Name: "mine",
			Shard: "mine-team-a", Replicas: 1, Flavour: v1alpha1.FlavourHAProxy, Ingresses: []string{"web"}, Phase: v1alpha1.ClaimBound}}},
	}
}

// TestReview30HAProxyClaimRefusesOtherTenantsWrites: the admission policy Shardgate renders for a
// Traefik cluster in which tenant team-a holds one HAProxy IngressClaim, applied to a real API
// server and bound to another tenant's namespace only (as the real binding, which binds every
// namespace, does too): that other tenant, who has nothing to do with team-a's claim and no
// HAProxy router serving them, can no longer create an ExternalName Service nor an Ingress of
// another controller (class nginx) with nginx's ssl-redirect annotation.
func TestReview30HAProxyClaimRefusesOtherTenantsWrites(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ctx := context.Background()
	other := controllertest.Namespace(t, c) // another tenant's namespace, not team-a
	d, err := render.RenderDesired(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60,
		ShardgateUser: "system:serviceaccount:shardgate-system:not-the-test", AdmissionPolicy: true,
		RouteKinds: routekinds.Registry{routekinds.Ingress{}}, Shards: review30ClaimCI().Shards()})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range d.Cluster {
		if o.GetKind() != "ValidatingAdmissionPolicy" && o.GetKind() != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		o = o.DeepCopy()
		// Each policy under a name of this test's; a binding for every namespace is bound to the
		// other tenant's alone (the API server is shared), one scoped by Shardgate keeps its scope.
		name := "review30-" + other + "-" + o.GetName()
		o.SetName(name)
		o.SetLabels(nil)
		o.SetAnnotations(nil)
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			_ = unstructured.SetNestedField(o.Object, name, "spec", "policyName")
			if _, scoped, _ := unstructured.NestedMap(o.Object, "spec", "matchResources", "namespaceSelector"); !scoped {
				_ = unstructured.SetNestedField(o.Object, map[string]any{"namespaceSelector": map[string]any{
					"matchLabels": map[string]any{"kubernetes.io/metadata.name": other}}}, "spec", "matchResources")
			}
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("the real API server refuses the rendered %s: %v", o.GetKind(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	// Wait for the policy to be enforced (its shard-label rule applies with or without the claim).
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		probe := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "probe-" + strings.Repeat("x", i%3+1),
			Labels: map[string]string{v1alpha1.ShardLabel: "default"}},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "x", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		err := c.Create(ctx, probe)
		if err != nil && strings.Contains(err.Error(), "label is set by Shardgate") {
			break
		}
		if err == nil {
			_ = c.Delete(ctx, probe)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is never enforced: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "db"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
	if err := c.Create(ctx, svc); err != nil {
		t.Errorf("another tenant's ExternalName Service is refused because tenant team-a claimed HAProxy routers: %v", err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "shop",
		Annotations: map[string]string{"nginx.ingress.kubernetes.io/ssl-redirect": "true"}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "shop", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	if err := c.Create(ctx, ing); err != nil {
		t.Errorf("another tenant's nginx Ingress is refused because tenant team-a claimed HAProxy routers: %v", err)
	}
}
