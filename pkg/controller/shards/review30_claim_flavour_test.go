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
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
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
	name := "review30-" + other
	for _, o := range d.Cluster {
		if o.GetKind() != "ValidatingAdmissionPolicy" && o.GetKind() != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		o = o.DeepCopy()
		o.SetName(name)
		o.SetLabels(nil)
		o.SetAnnotations(nil)
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			_ = unstructured.SetNestedField(o.Object, name, "spec", "policyName")
			_ = unstructured.SetNestedField(o.Object, map[string]any{"namespaceSelector": map[string]any{
				"matchLabels": map[string]any{"kubernetes.io/metadata.name": other}}}, "spec", "matchResources")
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

// TestReview30HAProxyClaimWithoutPolicyAPIPagesTheOperator: a cluster without the
// ValidatingAdmissionPolicy API, whose profile allows HAProxy claims. Tenant team-a's HAProxy
// claim is admitted (Decide does not know it can never be rendered: no HAProxy shard is rendered
// without the policy), then the shards controller reports ShardsAvailable=False/ApplyFailed for
// the whole cluster, the condition ShardgateShardsUnavailable (critical) pages on, and which
// replaces the profile shards' own availability: a tenant pages the operator at will, while
// "a claimed shard ... never makes the cluster unavailable nor pages the operator".
func TestReview30HAProxyClaimWithoutPolicyAPIPagesTheOperator(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client)}
	want := review30ClaimCI()
	key := newCI(t, seed.Client, ns, want.Spec.Shards...)
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	ci.Spec.Claims = want.Spec.Claims
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Claims = want.Status.Claims
	if err := seed.Client.Status().Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	user := controllertest.UserCluster(access, key)
	user.Caps = clusteraccess.Capabilities{AdmissionPolicy: false, Version: "v1.37"}
	_, _ = r.Reconcile(context.Background(), controllertest.Request(key))
	c, ok := r.Board.Posted(key, v1alpha1.ConditionShardsAvailable)
	if !ok {
		t.Fatal("no ShardsAvailable posted")
	}
	if c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "IngressClaim team-a/mine") {
		t.Errorf("tenant team-a's HAProxy claim, admitted in a cluster that cannot run it, makes the cluster's "+
			"ShardsAvailable %s/%s (pages ShardgateShardsUnavailable, hides the profile shards' own state): %s", c.Status, c.Reason, c.Message)
	}
}
