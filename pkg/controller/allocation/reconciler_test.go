package allocation

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func ingress(ns, name, class, host string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: host}}}}
	if class != "" {
		ing.Spec.IngressClassName = ptr.To(class)
	}
	return ing
}

func TestIngressesAreAllocatedToldAndReleased(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ctx := context.Background()
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, Profile: "p", ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(nil),
		Allocation: v1alpha1.ResolveAllocation(v1alpha1.AllocationSettings{})}}
	if err := seed.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(ci)
	user := controllertest.UserCluster(access, key,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName("default")}},
		ingress("team", "web", names.IngressClassName, ""),
		ingress("team", "theirs", "nginx", "x.example.org"),
		ingress("team", "custom", names.IngressClassName, "shop.example.org"),
	)
	u := user.Client
	// No domain yet: nothing is decided.
	controllertest.Reconcile(t, r, key, 2)
	web := &networkingv1.Ingress{}
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "web"}, web); err != nil {
		t.Fatal(err)
	}
	if _, ok := web.Annotations[v1alpha1.AllocationAnnotation]; ok {
		t.Fatal("allocated before the cluster has a domain")
	}
	if err := seed.Client.Get(ctx, key, ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Domain = "c1.z.test"
	if err := seed.Client.Status().Update(ctx, ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	label, _ := names.DefaultHostLabel("team", "web")
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "web"}, web); err != nil {
		t.Fatal(err)
	}
	if web.Labels[v1alpha1.ShardLabel] != "default" || web.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		web.Spec.Rules[0].Host != label+".c1.z.test" {
		t.Fatalf("web: labels %v annotations %v host %q", web.Labels, web.Annotations, web.Spec.Rules[0].Host)
	}
	custom := &networkingv1.Ingress{}
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "custom"}, custom); err != nil {
		t.Fatal(err)
	}
	if custom.Annotations[v1alpha1.CNAMETargetAnnotation] != "c1.z.test" {
		t.Fatalf("custom host: %v", custom.Annotations)
	}
	theirs := &networkingv1.Ingress{}
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "theirs"}, theirs); err != nil {
		t.Fatal(err)
	}
	if _, ok := theirs.Annotations[v1alpha1.AllocationAnnotation]; ok {
		t.Fatal("another class' Ingress was allocated")
	}
	evs := &corev1.EventList{}
	if err := u.List(ctx, evs, client.InNamespace("team")); err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 2 {
		t.Fatalf("%d Events, want one per allocated Ingress", len(evs.Items))
	}
	if err := seed.Client.Get(ctx, key, ci); err != nil {
		t.Fatal(err)
	}
	if ci.Status.Routes != 2 || ci.Status.RejectedRoutes != 0 {
		t.Fatalf("routes %d rejected %d", ci.Status.Routes, ci.Status.RejectedRoutes)
	}

	// An Ingress moved to another class is released: its marks go, with an Event.
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "custom"}, custom); err != nil {
		t.Fatal(err)
	}
	custom.Spec.IngressClassName = ptr.To("nginx")
	if err := u.Update(ctx, custom); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "custom"}, custom); err != nil {
		t.Fatal(err)
	}
	if _, ok := custom.Annotations[v1alpha1.AllocationAnnotation]; ok || custom.Labels[v1alpha1.ShardLabel] != "" {
		t.Fatalf("not released: %v %v", custom.Labels, custom.Annotations)
	}

	// Deletion takes the marks back; the hosts stay.
	if err := seed.Client.Delete(ctx, ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if err := u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "web"}, web); err != nil {
		t.Fatal(err)
	}
	if _, ok := web.Labels[v1alpha1.ShardLabel]; ok || len(web.Annotations) != 0 || web.Spec.Rules[0].Host != label+".c1.z.test" {
		t.Fatalf("after release: labels %v annotations %v host %q", web.Labels, web.Annotations, web.Spec.Rules[0].Host)
	}
	if err := seed.Client.Get(ctx, key, &v1alpha1.ClusterIngress{}); !apierrors.IsNotFound(err) {
		t.Fatalf("finalizer not released: %v", err)
	}
}
