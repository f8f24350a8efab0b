package shards

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
)

// fakeSeed is a seed without an API server: the CRDs' enum would refuse a flavour registered only
// in tests.
func fakeSeed(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(s))
	must(t, v1alpha1.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ClusterIngress{}).Build()
}

// TestAFlavourTheControllerWasNotWrittenFor: a Traefik shard and a shard of a flavour registered
// only here, in one cluster. The controller applies each flavour's class, role, TLS wiring and
// routers, marks the first shard's class the default, reports the shards available once their
// routers are ready, and prunes the other flavour's objects, its class among them, when its last
// shard goes; Traefik's stay.
func TestAFlavourTheControllerWasNotWrittenFor(t *testing.T) {
	flavourtest.Use(t)
	ctx := context.Background()
	seed := fakeSeed(t)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed)}
	key := newCI(t, seed, "seed", v1alpha1.ShardSpec{Name: "default"},
		v1alpha1.ShardSpec{Name: "fast", Flavour: flavourtest.Name, Publishing: v1alpha1.PublishNodePort})
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Get(ctx, key, ci))
	ci.Spec.TLS = v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"},
		RedirectHTTP: true})
	must(t, seed.Update(ctx, ci))
	user := controllertest.UserCluster(access, key)
	u := user.Client
	controllertest.Reconcile(t, r, key, 2)

	classes := map[string]string{names.IngressClassName: "traefik.io/ingress-controller", flavourtest.Class: flavourtest.Controller}
	for class, controller := range classes {
		c := &networkingv1.IngressClass{}
		if !exists(t, u, c, client.ObjectKey{Name: class}) || c.Spec.Controller != controller {
			t.Errorf("class %s: %+v", class, c.Spec)
		}
		_, marked := c.Annotations[ingressclass.DefaultClassAnnotation]
		if marked != (class == names.IngressClassName) {
			t.Errorf("class %s marked default: %v (the first shard's class is)", class, marked)
		}
	}
	fast := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("fast")}
	d := &appsv1.Deployment{}
	if !exists(t, u, d, fast) || d.Spec.Template.Spec.Containers[0].Image != flavourtest.Image ||
		!slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--selector=shardgate.io/shard=fast") {
		t.Fatalf("fast's routers: %+v", d.Spec.Template.Spec.Containers)
	}
	fakeOnly := []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&networkingv1.IngressClass{}, client.ObjectKey{Name: flavourtest.Class}},
		{&rbacv1.ClusterRole{}, client.ObjectKey{Name: flavourtest.Role}},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.Namespace, Name: flavourtest.TLSConfigName}},
		{&appsv1.Deployment{}, fast},
	}
	for _, o := range fakeOnly {
		if !exists(t, u, o.obj, o.key) {
			t.Errorf("%T %s not applied", o.obj, o.key)
		}
	}

	for _, name := range []string{"default", "fast"} {
		d := &appsv1.Deployment{}
		exists(t, u, d, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(name)})
		d.Status.ReadyReplicas = 1
		must(t, u.Status().Update(ctx, d))
	}
	controllertest.Reconcile(t, r, key, 1)
	if c := posted(t, r, key, v1alpha1.ConditionShardsAvailable); c.Status != metav1.ConditionTrue {
		t.Errorf("ShardsAvailable: %+v", c)
	}

	// The other flavour's last shard goes: everything it brought goes with it.
	must(t, seed.Get(ctx, key, ci))
	ci.Spec.Shards = ci.Spec.Shards[:1]
	must(t, seed.Update(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	for _, o := range fakeOnly {
		if exists(t, u, o.obj, o.key) {
			t.Errorf("%T %s left behind", o.obj, o.key)
		}
	}
	for _, o := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.Namespace, Name: render.TraefikTLSConfigName}},
		{&appsv1.Deployment{}, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}},
	} {
		if !exists(t, u, o.obj, o.key) {
			t.Errorf("Traefik's %T %s pruned", o.obj, o.key)
		}
	}
}

// TestOnlyAnotherFlavour: a cluster whose only shard is of the other flavour gets that flavour's
// class as its default, and no Traefik class.
func TestOnlyAnotherFlavour(t *testing.T) {
	flavourtest.Use(t)
	seed := fakeSeed(t)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed)}
	key := newCI(t, seed, "seed", v1alpha1.ShardSpec{Name: "default", Flavour: flavourtest.Name})
	u := controllertest.UserCluster(access, key).Client
	controllertest.Reconcile(t, r, key, 2)
	c := &networkingv1.IngressClass{}
	exists(t, u, c, client.ObjectKey{Name: flavourtest.Class})
	if c.Annotations[ingressclass.DefaultClassAnnotation] != "true" {
		t.Errorf("the fake class is not the default: %+v", c.ObjectMeta)
	}
	if exists(t, u, &networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}) {
		t.Error("a Traefik class without a Traefik shard")
	}
}
