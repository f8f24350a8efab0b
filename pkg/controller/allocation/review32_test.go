package allocation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// review32Reconciler: HTTPRoutes named in routes, in one namespace; the user cluster's API server
// answers every labels/annotations/spec patch of the routes named in bad with refuse(name).
func review32Reconciler(t *testing.T, routes []string, bad []string,
	refuse func(name string) error) (*Reconciler, types.NamespacedName, client.Client) {
	t.Helper()
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	for _, n := range routes {
		objs = append(objs, tenantHTTPRoute(n))
	}
	kinds := routekinds.Registry{routekinds.HTTPRoute{}}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, kinds, objs...)
	w := interceptor.NewClient(u.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if slices.Contains(bad, obj.GetName()) {
				return refuse(obj.GetName())
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	access := clusteraccess.NewFake()
	access.Add(key, &clusteraccess.FakeCluster{Client: w, Routes: kinds})
	r.Access = access
	return r, key, u
}

// review32Drive runs passes as controller-runtime's queue would (an error: the default
// controller rate limiter's backoff, the RequeueAfter ignored; else RequeueAfter; else at once,
// as the watch event of a write would) until done or n passes ran, and returns the simulated
// wait, the number of passes and how many asked for the next within a second.
func review32Drive(t *testing.T, r *Reconciler, key types.NamespacedName, n int,
	done func() bool) (wait time.Duration, passes int, immediate int) {
	t.Helper()
	limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	req := reconcile.Request{NamespacedName: key}
	for passes = 1; passes <= n; passes++ {
		res, err := r.Reconcile(context.Background(), req)
		if done() {
			return wait, passes, immediate
		}
		switch {
		case err != nil:
			wait += limiter.When(req)
		case res.RequeueAfter > 0:
			limiter.Forget(req)
			wait += res.RequeueAfter
			if res.RequeueAfter < time.Second {
				immediate++
			}
		default:
			// Waits for a watch event: the pass' own writes (if any) bring one; run again.
		}
	}
	return wait, passes, immediate
}

// TestReview32RefusedMarksStarveTheCluster: a route whose marks write the user cluster's API
// server always refuses (T: an HTTPRoute with 32 parentRefs, to which Shardgate appends its
// shard Gateway, parentRefs maxItems=32 -> 422; or an Ingress whose annotations are at the 256 KiB
// limit; O: an admission webhook) is "marks" on every pass and comes first. Review32 found that
// with a budget of writes per pass (500, taken out since), as many refused routes as the budget
// kept every other route of the cluster from being written: every pass must still write the
// others.
func TestReview32RefusedMarksStarveTheCluster(t *testing.T) {
	invalid := func(name string) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}, name,
			field.ErrorList{field.TooMany(field.NewPath("spec", "parentRefs"), 33, 32)})
	}
	t.Run("budget full of refused routes", func(t *testing.T) {
		good := []string{"r1", "r2", "r3"}
		r, key, u := review32Reconciler(t, append([]string{"a1", "a2"}, good...), []string{"a1", "a2"}, invalid)
		wait, passes, _ := review32Drive(t, r, key, 40, func() bool {
			a, s := attachedAndTold(t, u, good)
			return a == len(good) && s == len(good)
		})
		if a, s := attachedAndTold(t, u, good); a != len(good) || s != len(good) {
			t.Errorf("after %d passes (%s of backoff) the other tenant's routes: %d/%d attached, %d/%d told; "+
				"want all (before the change the first pass wrote them)", passes, wait, a, len(good), s, len(good))
		}
	})
}

// TestReview32ConflictsHotLoop: O's API server answers 409 to every patch of some routes (or a
// cache that never catches up). Review32 found that with a budget of writes per pass (taken out
// since), conflicts counted against it, so every pass wrote nothing, asked for the next at once
// (1 ms) and the routes after them were never written: a hot loop on the seed. No pass may ask
// for the next at once, and the other routes are written.
func TestReview32ConflictsHotLoop(t *testing.T) {
	conflict := func(name string) error {
		return apierrors.NewConflict(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "httproutes"}, name,
			fmt.Errorf("the object has been modified"))
	}
	r, key, u := review32Reconciler(t, []string{"a1", "a2", "r1"}, []string{"a1", "a2"}, conflict)
	wait, passes, immediate := review32Drive(t, r, key, 50, func() bool {
		a, s := attachedAndTold(t, u, []string{"r1"})
		return a == 1 && s == 1
	})
	a, s := attachedAndTold(t, u, []string{"r1"})
	if immediate > 3 || a != 1 || s != 1 {
		t.Errorf("%d passes in %s, %d of them asking for the next at once with nothing written; r1 attached %d, told %d;"+
			" want no hot loop and r1 written", passes, wait, immediate, a, s)
	}
}
