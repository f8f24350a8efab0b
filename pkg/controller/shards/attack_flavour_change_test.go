package shards

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
	"github.com/shardgate/shardgate/test/framework"
)

// TestAttackFlavourChangedOnALiveShard (review finding: a flavour changed on a live shard): the
// operator changes the flavour of the cluster's only shard. The shard's ClusterRoleBinding keeps
// its name (shardgate-router-<shard>) but its roleRef now names the other flavour's role, and a
// real API server refuses a changed roleRef: the shard's apply stops there on every pass, so its
// Deployment keeps running the old flavour's routers. Meanwhile prune deletes what those routers
// still use (the old flavour's IngressClass, ClusterRole and TLS configuration), because no
// rendered shard has the old flavour any more.
//
// Expected: the shard converges to the new flavour (the binding is replaced), or, while it has
// not, the old routers keep what they run on.
func TestAttackFlavourChangedOnALiveShard(t *testing.T) {
	flavourtest.Use(t)
	if _, err := framework.LocateTools(framework.ToolKubeAPIServer, framework.ToolEtcd); err != nil {
		t.Skipf("needs a real API server: %v", err)
	}
	ctx := context.Background()
	seed := fakeSeed(t)
	userCP := framework.StartControlPlane(t, "user", framework.ControlPlaneOptions{})
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed)}
	key := newCI(t, seed, "seed", v1alpha1.ShardSpec{Name: "default", Publishing: v1alpha1.PublishNodePort})
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Get(ctx, key, ci))
	ci.Spec.TLS = v1alpha1.ResolveTLS(v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "le"}})
	must(t, seed.Update(ctx, ci))
	u := userCP.Client
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Caps: clusteraccess.Capabilities{Version: "v1.37"}})
	controllertest.Reconcile(t, r, key, 2)

	router := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("default")}
	d := &appsv1.Deployment{}
	if !exists(t, u, d, router) || d.Spec.Template.Spec.Containers[0].Image != render.TraefikImage {
		t.Fatalf("Traefik routers not deployed: %+v", d.Spec.Template.Spec.Containers)
	}

	// 3 a.m.: the shard's flavour is changed.
	must(t, seed.Get(ctx, key, ci))
	ci.Spec.Shards[0].Flavour = flavourtest.Name
	must(t, seed.Update(ctx, ci))
	var lastErr error
	for range 3 {
		_, lastErr = r.Reconcile(ctx, controllertest.Request(key))
	}
	if lastErr != nil {
		t.Errorf("the shard never converges to its new flavour: %v", lastErr)
	}
	must(t, u.Get(ctx, router, d))
	running := d.Spec.Template.Spec.Containers[0].Image
	if running != flavourtest.Image {
		t.Errorf("the shard still runs %s after its flavour changed", running)
	}
	if running == render.TraefikImage {
		for _, o := range []struct {
			obj client.Object
			key client.ObjectKey
		}{
			{&networkingv1.IngressClass{}, client.ObjectKey{Name: names.IngressClassName}},
			{&rbacv1.ClusterRole{}, client.ObjectKey{Name: "shardgate-router-traefik"}},
			{&corev1.ConfigMap{}, client.ObjectKey{Namespace: names.Namespace, Name: render.TraefikTLSConfigName}},
		} {
			if !exists(t, u, o.obj, o.key) {
				t.Errorf("pruned %T %s while the Traefik routers that use it still run", o.obj, o.key)
			}
		}
	}
}
