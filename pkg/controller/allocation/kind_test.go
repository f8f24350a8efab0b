package allocation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routekinds/routekindstest"
)

// TestASecondKindNeedsNoAllocationChange: a route kind the controller was not written for,
// registered only here beside Ingress, is allocated with the Ingresses in one plan (a host an
// Ingress of namespace a holds is refused to a Tunnel of namespace b), told (marks, default
// hostname, an Event naming the Tunnel), released when it becomes another gateway's, counted in
// status, and let go of (marks and the shard's address) when the ClusterIngress goes. No real API
// server: nothing serves the kind.
func TestASecondKindNeedsNoAllocationChange(t *testing.T) {
	ctx := context.Background()
	kinds := routekinds.Registry{routekinds.Ingress{}, routekindstest.Tunnels{}}
	tunnel := func(ns, name, gateway string, hosts ...string) *routekindstest.Tunnel {
		return &routekindstest.Tunnel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
			Spec: routekindstest.TunnelSpec{Gateway: gateway, Hostnames: hosts}}
	}
	holder := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "shop", CreationTimestamp: metav1.Unix(100, 0)},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(names.IngressClassName),
			Rules: []networkingv1.IngressRule{{Host: "shop.example.org"}}}}
	taker := tunnel("b", "shop", routekindstest.Gateway, "shop.example.org")
	taker.CreationTimestamp = metav1.Unix(200, 0)
	theirs := tunnel("a", "theirs", "nginx", "x.example.org")
	theirs.Labels = map[string]string{v1alpha1.ShardLabel: "default"}
	theirs.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated}
	var objs []client.Object
	for _, ns := range []string{"a", "b"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	objs = append(objs, holder, taker, theirs, tunnel("a", "web", routekindstest.Gateway))
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, kinds, objs...)
	seed := r.Client
	controllertest.Reconcile(t, r, key, 2)

	get := func(ns, name string) *routekindstest.Tunnel {
		t.Helper()
		got := &routekindstest.Tunnel{}
		must(t, u.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got))
		return got
	}
	label, _ := names.DefaultHostLabel("a", "web")
	web := get("a", "web")
	if web.Labels[v1alpha1.ShardLabel] != "default" || web.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		len(web.Spec.Hostnames) != 1 || web.Spec.Hostnames[0] != label+".c1.z.test" {
		t.Fatalf("hostless Tunnel: labels %v annotations %v hostnames %v", web.Labels, web.Annotations, web.Spec.Hostnames)
	}
	if got := get("b", "shop").Annotations[v1alpha1.AllocationAnnotation]; got != "Rejected: host shop.example.org is already served for namespace a" {
		t.Errorf("a Tunnel took the host an Ingress of another namespace holds: %q", got)
	}
	if got := get("a", "theirs"); got.Labels[v1alpha1.ShardLabel] != "" || len(got.Annotations) != 0 {
		t.Errorf("another gateway's Tunnel keeps Shardgate's marks: %v %v", got.Labels, got.Annotations)
	}
	shop := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKeyFromObject(holder), shop))
	if shop.Annotations[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated {
		t.Errorf("the Ingress lost its host: %v", shop.Annotations)
	}
	events := &corev1.EventList{}
	must(t, u.List(ctx, events))
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Tunnel" && e.InvolvedObject.APIVersion == "test.shardgate.io/v1" {
			reasons[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name+" "+e.Reason] = true
		}
	}
	for _, want := range []string{"a/web " + v1alpha1.AllocationAllocated, "b/shop " + v1alpha1.AllocationRejected,
		"a/theirs " + v1alpha1.AllocationReleased} {
		if !reasons[want] {
			t.Errorf("no Event %s on the Tunnel (have %v)", want, reasons)
		}
	}
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Get(ctx, key, ci))
	r.Board.Overlay(ci) // the fake client cannot stand for the status writer's apply
	if ci.Status.Routes != 2 || ci.Status.RejectedRoutes != 1 {
		t.Errorf("status counts %d allocated, %d rejected; want 2 and 1 across both kinds", ci.Status.Routes, ci.Status.RejectedRoutes)
	}
	// And per kind, in the registry's order.
	if got, want := fmt.Sprint(ci.Status.RouteKinds), "[{Ingress 1 0} {Tunnel 1 1}]"; got != want {
		t.Errorf("status.routeKinds %s, want %s", got, want)
	}

	// The shard's routers publish its address; the cluster goes: everything Shardgate wrote goes.
	web.Status.Addresses = []string{"c1.z.test", "192.0.2.1"}
	must(t, u.Status().Update(ctx, web))
	must(t, seed.Delete(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	web = get("a", "web")
	if web.Labels[v1alpha1.ShardLabel] != "" || len(web.Annotations) != 0 || strings.Join(web.Status.Addresses, ",") != "192.0.2.1" ||
		web.Spec.Hostnames[0] != label+".c1.z.test" {
		t.Errorf("after cleanup: labels %v annotations %v addresses %v hostnames %v", web.Labels, web.Annotations,
			web.Status.Addresses, web.Spec.Hostnames)
	}
	if err := seed.Get(ctx, key, ci); err == nil {
		t.Errorf("the ClusterIngress kept its finalizer: %v", ci.Finalizers)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newKindsReconciler is a Reconciler for the ClusterIngress seed/c1 (domain c1.z.test, the given
// shards and allocation settings) whose user cluster is a fake client serving kinds, holding objs.
func newKindsReconciler(t *testing.T, shards []v1alpha1.ShardSpec, a v1alpha1.AllocationSettings,
	kinds routekinds.Registry, objs ...client.Object) (*Reconciler, types.NamespacedName, client.Client) {
	t.Helper()
	seedScheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(seedScheme))
	must(t, v1alpha1.AddToScheme(seedScheme))
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, Profile: "p", ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(shards),
		Allocation: v1alpha1.ResolveAllocation(a)},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test"}}
	seed := fake.NewClientBuilder().WithScheme(seedScheme).WithObjects(ci).WithStatusSubresource(ci).Build()
	key := client.ObjectKeyFromObject(ci)
	userScheme := clusteraccess.UserClusterScheme()
	must(t, kinds.AddToScheme(userScheme))
	var routes []client.Object
	for _, k := range kinds {
		routes = append(routes, k.New())
	}
	u := fake.NewClientBuilder().WithScheme(userScheme).WithObjects(objs...).WithStatusSubresource(routes...).Build()
	access := clusteraccess.NewFake()
	access.Add(key, &clusteraccess.FakeCluster{Client: u, Routes: kinds})
	return &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed)}, key, u
}
