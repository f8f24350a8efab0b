package allocation

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// review43Cluster: n head routes (named a00.., oldest in plan order: same age, sorted by name)
// and n victim routes (v00..) of namespace team, all attached by a first pass, and a user cluster
// whose status patches run through statusPatch.
func review43Cluster(t *testing.T, n int) (*Reconciler, types.NamespacedName, client.Client, *clusteraccess.FakeCluster,
	[]string, []string) {
	t.Helper()
	head, victims := make([]string, n), make([]string, n)
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	for i := range n {
		head[i], victims[i] = fmt.Sprintf("a%02d", i), fmt.Sprintf("v%02d", i)
		objs = append(objs, tenantHTTPRoute(head[i]), tenantHTTPRoute(victims[i]))
	}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Registry{routekinds.HTTPRoute{}}, objs...)
	c, _ := r.Access.Get(key)
	fc := c.(*clusteraccess.FakeCluster)
	controllertest.Reconcile(t, r, key, 1)
	if attached, told := attachedAndTold(t, u, append(append([]string{}, head...), victims...)); attached != 2*n || told != 0 {
		t.Fatalf("first pass: %d attached, %d told; want %d and 0", attached, told, 2*n)
	}
	return r, key, u, fc, head, victims
}

// TestReview43FailingStatusesStarveEveryOther: statusesBeforeYield routes at the head of the plan
// whose status patch the user cluster refuses (an admission webhook, status.parents over its
// maxItems, ...), and a steady stream of routes without a decision (another namespace's CI, a
// tenant editing an Ingress of another class): every pass spends its share of statuses on the
// failing ones and yields, so no other route of the cluster is ever told its status.parents.
// passOrder promises "a route whose write fails holds up no other".
func TestReview43FailingStatusesStarveEveryOther(t *testing.T) {
	r, key, u, fc, head, victims := review43Cluster(t, statusesBeforeYield)
	failing := map[string]bool{}
	for _, n := range head {
		failing[n] = true
	}
	fc.Client = interceptor.NewClient(u.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, o client.Object, p client.Patch,
			opts ...client.SubResourcePatchOption,
		) error {
			if failing[o.GetName()] {
				return apierrors.NewForbidden(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "httproutes"},
					o.GetName(), fmt.Errorf("denied by a webhook"))
			}
			return cl.SubResource(sub).Patch(ctx, o, p, opts...)
		},
		List: undecidedWhilePlanning(fc), // a route without a decision arrives meanwhile, as on every pass
	})
	for range 20 {
		_, _ = r.Reconcile(context.Background(), controllertest.Request(key)) // the head's errors are expected
	}
	if _, told := attachedAndTold(t, u, victims); told != len(victims) {
		t.Fatalf("after 20 passes, %d of %d routes behind %d failing statuses told their status; want all",
			told, len(victims), len(head))
	}
}

// TestReview43TenantStarvesOtherTenantsStatuses: tenant T owns the oldest statusesBeforeYield
// HTTPRoutes (the plan's head) and edits their spec between passes (each edit bumps the
// generation, so Shardgate's parent entry needs a new observedGeneration: a status-only change),
// and keeps editing a route Shardgate does not serve (no allocation annotation: counted as
// undecided). Every pass tells T's statuses and yields: the other routes' status.parents are
// never written while T keeps it up.
func TestReview43TenantStarvesOtherTenantsStatuses(t *testing.T) {
	r, key, u, fc, head, victims := review43Cluster(t, statusesBeforeYield)
	var edits atomic.Uint64
	fc.Client = interceptor.NewClient(u.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, o client.Object, p client.Patch,
			opts ...client.SubResourcePatchOption,
		) error {
			return cl.SubResource(sub).Patch(ctx, o, p, opts...)
		},
		List: undecidedWhilePlanning(fc), // T edits its Ingress of another class
	})
	for range 20 {
		for _, n := range head { // T edits its routes' spec: the API server bumps the generation
			got := &gatewayv1.HTTPRoute{}
			must(t, u.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: n}, got))
			got.Generation++
			got.Spec.Rules = []gatewayv1.HTTPRouteRule{{Name: ptr.To(gatewayv1.SectionName(fmt.Sprint("e", edits.Add(1))))}}
			must(t, u.Update(context.Background(), got))
		}
		controllertest.Reconcile(t, r, key, 1)
	}
	if _, told := attachedAndTold(t, u, victims); told != len(victims) {
		t.Fatalf("after 20 passes, %d of %d other tenants' routes told their status; want all", told, len(victims))
	}
}

// undecidedWhilePlanning: a route input without a decision arrives while each pass reads the
// routes (after the pass' snapshot of Undecided): a stream faster than one per pass.
func undecidedWhilePlanning(fc *clusteraccess.FakeCluster) func(context.Context, client.WithWatch, client.ObjectList,
	...client.ListOption) error {
	return func(ctx context.Context, cl client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if _, ok := l.(*gatewayv1.HTTPRouteList); ok {
			fc.UndecidedInputs.Add(1)
		}
		return cl.List(ctx, l, opts...)
	}
}

// TestReview43SkippedStatusesSpendTheShare: the statuses a pass skips because the cache has not
// shown the last pass' write yet (unseen) count toward its share (tell counts before write
// skips). The pass right after a yield, started by the new route's event at once, finds the
// statuses the yielded pass just wrote at the head of its order, still unseen: it starts no
// status write at all and yields again, and so on for as long as routes keep arriving faster
// than the watch shows the writes.
func TestReview43SkippedStatusesSpendTheShare(t *testing.T) {
	unseen := map[types.UID]string{}
	for i := range statusesBeforeYield {
		unseen[types.UID(fmt.Sprintf("a%02d", i))] = "" // told by the last pass, not in the cache yet
	}
	p := newWritePass(unseen, func() bool { return true })
	var started atomic.Int32
	for i := range 2 * statusesBeforeYield {
		name := fmt.Sprintf("a%02d", i)
		if i >= statusesBeforeYield {
			name = fmt.Sprintf("v%02d", i)
		}
		if !p.tell(tenantHTTPRoute(name), func() (bool, error) { started.Add(1); return true, nil }) {
			break
		}
	}
	p.wait()
	if started.Load() == 0 {
		t.Fatalf("a pass whose first %d statuses are still unseen started no status write and yielded", statusesBeforeYield)
	}
}
