package allocation

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// heavyCluster is cluster c1 in a seed namespace of its own, with shards default and heavy of
// Traefik, and the allocation reconciler on it.
func heavyCluster(t *testing.T) (*framework.ControlPlane, *clusteraccess.Fake, *Reconciler, *v1alpha1.ClusterIngress) {
	t.Helper()
	seed := controllertest.Seed(t)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: controllertest.Namespace(t, seed.Client), Name: "c1"},
		Spec: v1alpha1.ClusterIngressSpec{ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"},
			Profile: "p", ClusterID: "c1", DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
			Shards:     v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy"}}),
			Allocation: v1alpha1.ResolveAllocation(v1alpha1.AllocationSettings{})}}
	must(t, seed.Client.Create(context.Background(), ci))
	return seed, access, r, ci
}

// backedBy is ing sending to Service svc.
func backedBy(ing *networkingv1.Ingress, svc string) *networkingv1.Ingress {
	ing.Spec.Rules[0].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
		PathType: new(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}
	return ing
}

// TestAFlavourChangeWaitsUntilNothingIsDropped: shard heavy's spec changes from Traefik to HAProxy
// under three Ingresses. The change is held, with heavy still rendered as Traefik, while the
// cluster serves no ValidatingAdmissionPolicy (HAProxy's routers need it), while a route on
// it would be refused by HAProxy (a default backend beside rules), then while one sends to an
// ExternalName Service (which HAProxy would proxy to; set before any admission policy), each named
// in FlavourChangesHeld; the routes get their kept-for mark meanwhile, and a route that lands on
// heavy holds it until its mark is read back. Once nothing is left, the change is admitted:
// status.shardFlavours says HAProxy, the condition goes, and the route that stayed keeps its shard
// and host under HAProxy's class annotation.
func TestAFlavourChangeWaitsUntilNothingIsDropped(t *testing.T) {
	seed, access, r, ci := heavyCluster(t)
	ctx, key := context.Background(), client.ObjectKeyFromObject(ci)
	odd := backedBy(ingress("team", "odd", names.IngressClassName, "odd.heavy.c1.z.test"), "web")
	odd.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	user := controllertest.UserCluster(access, key,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName("default")}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName("heavy")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "local"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}},
		backedBy(ingress("team", "app", names.IngressClassName, "app.heavy.c1.z.test"), "web"),
		backedBy(ingress("team", "ext", names.IngressClassName, "ext.heavy.c1.z.test"), "local"),
		odd,
	)
	u := user.Client
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Status.Domain = "c1.z.test"
	must(t, seed.Client.Status().Update(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	must(t, seed.Client.Get(ctx, key, ci))
	if len(ci.Status.ShardFlavours) != 2 || ci.Status.ShardFlavours[1] != (v1alpha1.ShardFlavour{Name: "heavy", Flavour: "traefik"}) {
		t.Fatalf("shardFlavours %+v", ci.Status.ShardFlavours)
	}

	// The operator's edit, as the lifecycle controller copies it from the profile.
	ci.Spec.Shards[1].Flavour, ci.Spec.Shards[1].Image = v1alpha1.FlavourHAProxy, "haproxy:new"
	must(t, seed.Client.Update(ctx, ci))
	held := func(want ...string) {
		t.Helper()
		controllertest.Reconcile(t, r, key, 1)
		must(t, seed.Client.Get(ctx, key, ci))
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
		if c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("FlavourChangesHeld %+v, want True", c)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				t.Errorf("FlavourChangesHeld says %q, want it to say %q", c.Message, w)
			}
		}
		if s := ci.Shards()[1]; s.Flavour != v1alpha1.FlavourTraefik || s.Image != "" {
			t.Errorf("heavy is rendered as %s (%q) while its change is held", s.Flavour, s.Image)
		}
	}
	held("haproxy routers cannot run here", "serves no ValidatingAdmissionPolicy")
	user.Caps.AdmissionPolicy = true // HAProxy routers need the admission policy
	held("Ingress team/odd would be refused: shard heavy's haproxy routers share route specs")
	app := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if app.Annotations[v1alpha1.KeptForAnnotation] != "traefik" || app.Labels[v1alpha1.ShardLabel] != "heavy" {
		t.Errorf("app while the change is held: labels %v annotations %v", app.Labels, app.Annotations)
	}
	must(t, u.Delete(ctx, odd))
	held("Ingress team/ext its Service local is ExternalName")
	must(t, u.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "local"}}))
	must(t, u.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "local"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}))
	// A route that lands on heavy now is marked first; the change waits for the mark to be read.
	must(t, u.Create(ctx, backedBy(ingress("team", "late", names.IngressClassName, "late.heavy.c1.z.test"), "web")))
	held("the marks written this pass on 1 of its routes", "Ingress team/late is being marked")

	controllertest.Reconcile(t, r, key, 1)
	must(t, seed.Client.Get(ctx, key, ci))
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld); c != nil {
		t.Errorf("FlavourChangesHeld %+v after the change was admitted", c)
	}
	if s := ci.Shards()[1]; s.Flavour != v1alpha1.FlavourHAProxy || s.Image != "haproxy:new" {
		t.Errorf("heavy after its change was admitted: %s (%q)", s.Flavour, s.Image)
	}
	controllertest.Reconcile(t, r, key, 1)
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if app.Labels[v1alpha1.ShardLabel] != "heavy" || app.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		app.Annotations[v1alpha1.ShardClassAnnotation] != render.ShardRouteClass(ci.Shards()[1]) ||
		app.Annotations[v1alpha1.KeptForAnnotation] != "traefik" || app.Spec.Rules[0].Host != "app.heavy.c1.z.test" {
		t.Errorf("app after the change: labels %v annotations %v", app.Labels, app.Annotations)
	}
}
