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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Second attack review of the HAProxy flavour, on a real API server: the policy Shardgate renders
// for a cluster with an HAProxy shard (render.AdmissionPolicy with HAProxy's TenantGuards) is
// applied to the seed API server, renamed and bound to one fresh namespace only, with a
// Shardgate identity that is not the test's, so the test client is a tenant.

// haproxyPolicy installs the policy, bound to ns, and waits until the API server enforces it (a
// Service annotated haproxy.org/route-acl is refused).
func haproxyPolicy(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	objs, err := render.AdmissionPolicy("system:serviceaccount:shardgate-system:not-the-test", routekinds.Registry{routekinds.Ingress{}},
		render.HAProxy{}.TenantGuards())
	if err != nil {
		t.Fatal(err)
	}
	name := "attack2-" + ns
	for _, o := range objs {
		o.SetName(name)
		o.SetLabels(nil)
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			_ = unstructured.SetNestedField(o.Object, name, "spec", "policyName")
			_ = unstructured.SetNestedField(o.Object, map[string]any{"namespaceSelector": map[string]any{
				"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}, "spec", "matchResources")
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("the real API server refuses the rendered %s: %v", o.GetKind(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe-" + strings.Repeat("x", i%3+1),
			Annotations: map[string]string{"haproxy.org/route-acl": "always_true"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		err := c.Create(ctx, probe)
		if err != nil && strings.Contains(err.Error(), "as configuration every tenant") {
			return
		}
		if err == nil {
			_ = c.Delete(ctx, probe)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is never enforced: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestAttack2HAProxyPathNewlineInjectsMapRows: haproxytech's controller writes every Ingress path
// raw into HAProxy's routing maps, one row per route, rows joined by '\n' (pkg/route/route.go
// AddHostPathRoute: MapAppend(PATH_EXACT, host+path+"\t\t\t"+backend); pkg/haproxy/maps:
// getContent joins rows with '\n', written to /etc/haproxy/maps/path-exact.map and sent through
// the runtime API as an "add map ... <<" payload). The API server validates an
// ImplementationSpecific path only as starting with "/", so T's own Ingress, host t.c1.z, with
//
//	path: "/x\nvictim.c1.z/\t\t\t<T's namespace>_<T's service>_80"
//
// adds the map row `victim.c1.z/  <T's backend>` to path-exact.map: the frontend looks up
// path-exact before path-prefix (pkg/controller/controller.go setupHAProxyRules), so T's backend
// takes `/` (or any exact path, one row per line) of another tenant's host, TLS-terminated with
// the cluster certificate. Nothing in the admission policy (nor allocation) looks at paths.
func TestAttack2HAProxyPathNewlineInjectsMapRows(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ns := controllertest.Namespace(t, c)
	haproxyPolicy(t, c, ns)

	path := "/x\nvictim.c1.z/\t\t\t" + ns + "_web_80"
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inject"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("shardgate-haproxy"), Rules: []networkingv1.IngressRule{{
			Host: "t.c1.z", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(networkingv1.PathTypeImplementationSpecific),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
						Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	err := c.Create(context.Background(), ing)
	if err == nil {
		t.Errorf("a tenant's Ingress whose path carries a newline (%q) is admitted in a cluster with an HAProxy shard: "+
			"the controller writes it raw into path-exact.map, a row routing another tenant's host to the tenant's backend", path)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestAttack2HAProxyDefaultBackendTakesEveryUnroutedHost: an Ingress's spec.defaultBackend
// becomes the default_backend of the shard's SHARED http and https frontends
// (pkg/ingress/ingress.go Update -> service.SetDefaultBackend -> FrontendEdit of both
// frontends), so every request the host maps do not route (hosts not or no longer allocated,
// another tenant's rejected or moving route, any name under the cluster's wildcard DNS) goes to
// T's Service with the cluster's wildcard certificate; two tenants doing it flip it (and reload
// HAProxy) at each sync. Shardgate neither refuses it (policy) nor takes it away (Ingress.Tell
// keeps spec.defaultBackend, even when it adds the default-host rule).
func TestAttack2HAProxyDefaultBackendTakesEveryUnroutedHost(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ns := controllertest.Namespace(t, c)

	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	rules := []networkingv1.IngressRule{{Host: "t.c1.z", IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
			PathType: ptr.To(networkingv1.PathTypePrefix), Backend: backend}}}}}}
	// A new Ingress with one (no router serves it before allocation) is refused by allocation.
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "catchall"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("shardgate-haproxy"), DefaultBackend: &backend, Rules: rules}}
	if why := (routekinds.Ingress{}).Refusal(ing); !strings.Contains(why, "spec.defaultBackend beside rules") {
		t.Errorf("an Ingress with rules and spec.defaultBackend is not refused by allocation: %q", why)
	}
	// An allocated one (Shardgate's shard class on it, written before the policy here) cannot take
	// one: its routers would apply it before allocation could refuse it.
	allocated := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "allocated",
		Annotations: map[string]string{"shardgate.io/ingress.class": "shardgate-shard-heavy"}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("shardgate-haproxy"), Rules: rules}}
	ctx := context.Background()
	if err := c.Create(ctx, allocated); err != nil {
		t.Fatal(err)
	}
	haproxyPolicy(t, c, ns)
	allocated.Spec.DefaultBackend = &backend
	if err := c.Update(ctx, allocated); err == nil || !strings.Contains(err.Error(), "cannot take a spec.defaultBackend") {
		t.Errorf("an allocated Ingress took a spec.defaultBackend: %v; its routers make it the default backend of the "+
			"shared frontends (every unrouted host of the shard)", err)
	}
}

// TestAttack2HAProxyScaleServerSlotsNotGuarded: haproxytech's controller v1.11.12 reads three more
// annotations from a route's Service and Ingress (pkg/service/endpoints.go scaleHAProxySrvs:
// "servers-increment", "server-slots", "scale-server-slots", any prefix) and cr-backend
// (pkg/service/service.go getBackendModel: a Backend custom resource "<namespace>/<name>" of any
// namespace) that the TenantGuards list lacks. scale-server-slots sets how many server slots every
// backend of T's Service gets (annotations.Int, any integer): "-1" on a Service with no ready
// endpoint makes newSrvSlots -1 and make([]*store.HAProxySrv, -1) panics in the sync goroutine:
// the controller (HAProxy's parent) exits at every sync, a crash loop of the shard's routers for
// every tenant; 50000000 makes them allocate (and write into haproxy.cfg) fifty million servers
// per backend instead.
func TestAttack2HAProxyScaleServerSlotsNotGuarded(t *testing.T) {
	seed := controllertest.Seed(t)
	c := seed.Client
	ns := controllertest.Namespace(t, c)
	haproxyPolicy(t, c, ns)
	for i, ann := range []string{"haproxy.org/scale-server-slots", "haproxy.org/server-slots", "haproxy.org/servers-increment",
		"haproxy.org/cr-backend"} {
		v := "-1"
		if strings.HasSuffix(ann, "cr-backend") {
			v = "other-namespace/backend"
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s" + strings.Repeat("x", i+1),
			Annotations: map[string]string{ann: v}}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		if err := c.Create(context.Background(), svc); err == nil {
			t.Errorf("a tenant's Service annotated %s: %s is admitted in a cluster with an HAProxy shard", ann, v)
		}
	}
}
