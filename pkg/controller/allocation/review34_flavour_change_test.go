package allocation

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// review34Setup: cluster c1 with shards default and heavy (Traefik), Ingress team/app on heavy
// sending to Service web, plus extra user objects. It returns after app is allocated and heavy's
// spec has been changed to HAProxy (not yet reconciled).
func review34Setup(t *testing.T, wrap func(client.WithWatch) client.WithWatch, extra ...client.Object,
) (*Reconciler, *v1alpha1.ClusterIngress, client.Client, *framework.ControlPlane) {
	t.Helper()
	seed, access, r, ci := heavyCluster(t)
	ctx, key := context.Background(), client.ObjectKeyFromObject(ci)
	objs := append([]client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName("default")}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName("heavy")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80}}}},
		backedBy(ingress("team", "app", names.IngressClassName, "app.heavy.c1.z.test"), "web"),
	}, extra...)
	var u client.Client
	if wrap == nil {
		uc := controllertest.UserCluster(access, key, objs...)
		uc.Caps.AdmissionPolicy = true // HAProxy routers need the admission policy
		u = uc.Client
	} else {
		c := wrap(fake.NewClientBuilder().WithScheme(clusteraccess.UserClusterScheme()).WithObjects(objs...).
			WithStatusSubresource(&corev1.Node{}, &networkingv1.Ingress{}, &appsv1.Deployment{}, &v1alpha1.RoutedIP{}).Build())
		access.Add(key, &clusteraccess.FakeCluster{Client: c, Caps: clusteraccess.Capabilities{AdmissionPolicy: true}})
		u = c
	}
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Status.Domain = "c1.z.test"
	must(t, seed.Client.Status().Update(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	app := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if app.Labels[v1alpha1.ShardLabel] != "heavy" {
		t.Fatalf("app not on heavy: %v", app.Labels)
	}
	// The operator's edit (as the lifecycle controller copies it from the profile).
	must(t, seed.Client.Get(ctx, key, ci))
	ci.Spec.Shards[1].Flavour, ci.Spec.Shards[1].Image = v1alpha1.FlavourHAProxy, "haproxy:new"
	must(t, seed.Client.Update(ctx, ci))
	return r, ci, u, seed
}

// review34Admit reconciles until heavy's change is admitted (at most 4 passes) and returns the
// result of the admitting pass.
func review34Admit(t *testing.T, r *Reconciler, seed *framework.ControlPlane, ci *v1alpha1.ClusterIngress) ctrl.Result {
	t.Helper()
	key := client.ObjectKeyFromObject(ci)
	for range 4 {
		res := controllertest.Reconcile(t, r, key, 1)
		must(t, seed.Client.Get(context.Background(), key, ci))
		if ci.Shards()[1].Flavour == v1alpha1.FlavourHAProxy {
			return res
		}
	}
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
	t.Fatalf("heavy's change never admitted: %+v", c)
	return ctrl.Result{}
}

// TestReview34AdmittedChangeLeavesKeptRoutesUnselected: the pass that admits heavy's change to
// HAProxy writes status.shardFlavours=haproxy, but the routes heavy keeps still lack
// shardgate.io/ingress.class=shardgate-shard-heavy, the only thing HAProxy's routers select
// Ingresses by; that pass schedules no further pass (RequeueAfter 0 once nothing is held), and
// neither this controller nor the shards controller is woken by a status.shardFlavours change
// (their ClusterIngress predicates pass spec, domain, claims, ... only). So the HAProxy routers the
// admission rolls out serve none of heavy's routes until some unrelated route or router event
// triggers another allocation pass: dropped traffic, the very thing the hold exists to prevent.
//
// Correct: a route is admitted onto the new flavour already carrying the new flavour's class
// annotation (write it while the change is held: Traefik ignores shardgate.io/ingress.class), or
// the admitting pass at least requeues at once so the marks follow before any router rolls.
func TestReview34AdmittedChangeLeavesKeptRoutesUnselected(t *testing.T) {
	r, ci, u, seed := review34Setup(t, nil)
	res := review34Admit(t, r, seed, ci)
	app := &networkingv1.Ingress{}
	must(t, u.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "app"}, app))
	if got, want := app.Annotations[v1alpha1.ShardClassAnnotation], names.ShardRouteClass("heavy"); got != want && res.RequeueAfter == 0 && !res.Requeue { //nolint:staticcheck
		t.Errorf("heavy admitted as HAProxy, but app (kept on heavy) has %s=%q, want %q, and no further pass is scheduled "+
			"(result %+v): HAProxy's routers would not select it", v1alpha1.ShardClassAnnotation, got, want, res)
	}
}

// TestReview34HeldChangeListsEveryServiceEveryPass: while a change is held by a Service (one
// tenant's ExternalName Service; it can stay so forever), every allocation pass - each route event
// anywhere in the cluster, and every 30 s - lists all of the cluster's Services, every namespace,
// from the user API server (uncached, 500 a page), although the shard's routes name one Service.
// A tenant editing its own Ingress in a loop turns each edit into a full Service list (here 2,000
// Services in 20 namespaces: 4 pages a pass). Correct: read only the Services the shard's routes
// name (by namespace/name, bounded by the routes), or from a watch cache.
func TestReview34HeldChangeListsEveryServiceEveryPass(t *testing.T) {
	var servicesRead atomic.Int64
	wrap := func(c client.WithWatch) client.WithWatch {
		return interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList,
			opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if l, ok := list.(*corev1.ServiceList); ok {
				servicesRead.Add(int64(len(l.Items)))
			}
			return err
		}})
	}
	var extra []client.Object
	for n := range 20 {
		ns := fmt.Sprintf("other%d", n)
		extra = append(extra, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for i := range 100 {
			extra = append(extra, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%d", i)},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})
		}
	}
	extra = append(extra, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "local"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}},
		backedBy(ingress("team", "ext", names.IngressClassName, "ext.heavy.c1.z.test"), "local"))
	r, ci, u, _ := review34Setup(t, wrap, extra...)
	ctx := context.Background()
	key := client.ObjectKeyFromObject(ci)
	controllertest.Reconcile(t, r, key, 2) // marks written, then held by Service local
	servicesRead.Store(0)
	const passes = 5
	for i := range passes {
		// T's edit of its own Ingress (a route event: one pass each).
		ing := &networkingv1.Ingress{}
		must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, ing))
		if ing.Annotations == nil {
			ing.Annotations = map[string]string{}
		}
		ing.Annotations["example.com/touch"] = fmt.Sprint(i)
		must(t, u.Update(ctx, ing))
		controllertest.Reconcile(t, r, key, 1)
	}
	// The shard's routes name 2 Services (web, local): a bounded read is 2 a pass.
	if n := servicesRead.Load(); n > 2*passes {
		t.Errorf("%d passes of a held change read %d Services from the user API server (%d a pass); the shard's routes name 2",
			passes, n, n/passes)
	}
}

// TestReview34UnwritableMarkHoldsTheChangeAnonymously: tenant T pads its Ingress app (on heavy)
// with annotations up to just under the API server's 256 KiB total, so Shardgate's write of the
// kept-for mark is refused (metadata.annotations: Too long), on every pass. The change is then
// held forever as RoutesBeingMarked, "until the kept-for mark written on 1 of its routes is read
// back", which it never will be: the condition names no route, so the operator cannot tell
// which tenant holds every cluster's change, nor that a write keeps failing (a route that would
// be refused is named; this one is not). The interceptor refuses exactly what the API server
// refuses (total annotation size over 262144 bytes).
//
// Correct: FlavourChangesHeld names the route(s) whose marks are missing (at least those whose
// write failed), with why, as it does for RoutesBlockChange.
func TestReview34UnwritableMarkHoldsTheChangeAnonymously(t *testing.T) {
	const limit = 262144
	size := func(ann map[string]string) int {
		n := 0
		for k, v := range ann {
			n += len(k) + len(v)
		}
		return n
	}
	wrap := func(c client.WithWatch) client.WithWatch {
		return interceptor.NewClient(c, interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object,
			patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*networkingv1.Ingress); ok && size(obj.GetAnnotations()) > limit {
				return apierrors.NewInvalid(schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, obj.GetName(),
					field.ErrorList{field.TooLong(field.NewPath("metadata", "annotations"), "", limit)})
			}
			return c.Patch(ctx, obj, patch, opts...)
		}})
	}
	r, ci, u, seed := review34Setup(t, wrap)
	ctx := context.Background()
	app := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKey{Namespace: "team", Name: "app"}, app))
	pad := "example.com/pad"
	app.Annotations[pad] = strings.Repeat("x", limit-size(app.Annotations)-len(pad)-4)
	must(t, u.Update(ctx, app))
	key := client.ObjectKeyFromObject(ci)
	for range 3 {
		_, _ = r.Reconcile(ctx, controllertest.Request(key)) // the refused write is returned as an error
	}
	must(t, seed.Client.Get(ctx, key, ci))
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
	if c == nil {
		t.Fatalf("heavy's change was admitted although app never got its kept-for mark")
	}
	if !strings.Contains(c.Message, "team/app") {
		t.Errorf("FlavourChangesHeld %s: %q names no route; app's mark can never be written", c.Reason, c.Message)
	}
}
