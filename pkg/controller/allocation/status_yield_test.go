package allocation

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestWritePassTellYields: a pass starts its first statusesBeforeYield statuses whatever
// arrives, then none once yield says a route arrived; with nothing arriving, it tells them all.
func TestWritePassTellYields(t *testing.T) {
	for _, c := range []struct {
		name     string
		arrived  bool
		statuses int
		want     int
	}{
		{"nothing arrived: every status", false, 3 * statusesBeforeYield, 3 * statusesBeforeYield},
		{"a route arrived: its share, then none", true, 3 * statusesBeforeYield, statusesBeforeYield},
		{"fewer statuses than its share", true, statusesBeforeYield / 2, statusesBeforeYield / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newWritePass(nil, func() bool { return c.arrived })
			started := 0
			for i := range c.statuses {
				if !p.tell(tenantHTTPRoute(fmt.Sprint("r", i)), func() (bool, error) { return true, nil }) {
					break
				}
				started++
			}
			p.wait()
			if started != c.want || p.yielded != (c.want < c.statuses) {
				t.Errorf("%d of %d statuses started (yielded %v), want %d", started, c.statuses, p.yielded, c.want)
			}
		})
	}
}

// TestAPassTellingStatusesYieldsToANewRoute: 3*statusesBeforeYield hostless HTTPRoutes, all
// attached by the first pass. In the second, a route without a decision arrives as the first
// status is written: the pass tells at least its share and leaves the rest to the next pass,
// which it asks for; the third, with nothing arriving, tells the rest.
func TestAPassTellingStatusesYieldsToANewRoute(t *testing.T) {
	n := 3 * statusesBeforeYield
	routes := make([]string, n)
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	for i := range routes {
		routes[i] = fmt.Sprint("r", i)
		objs = append(objs, tenantHTTPRoute(routes[i]))
	}
	r, key, u := newKindsReconciler(t, nil, v1alpha1.AllocationSettings{}, routekinds.Registry{routekinds.HTTPRoute{}}, objs...)
	c, _ := r.Access.Get(key)
	fc := c.(*clusteraccess.FakeCluster)
	var arriving atomic.Bool
	fc.Client = interceptor.NewClient(u.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, o client.Object, p client.Patch,
			opts ...client.SubResourcePatchOption,
		) error {
			if arriving.Load() {
				fc.UndecidedInputs.Add(1)
			}
			return cl.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	controllertest.Reconcile(t, r, key, 1)
	if attached, told := attachedAndTold(t, u, routes); attached != n || told != 0 {
		t.Fatalf("first pass: %d attached, %d told; want %d and 0", attached, told, n)
	}
	arriving.Store(true)
	res := controllertest.Reconcile(t, r, key, 1)
	_, told := attachedAndTold(t, u, routes)
	if told < statusesBeforeYield || told >= n || res.RequeueAfter != yieldedRecheck {
		t.Fatalf("second pass, a route arriving: %d of %d told, requeue after %s; want at least %d, not all, and %s",
			told, n, res.RequeueAfter, statusesBeforeYield, yieldedRecheck)
	}
	arriving.Store(false)
	res = controllertest.Reconcile(t, r, key, 1)
	if _, told := attachedAndTold(t, u, routes); told != n || res.RequeueAfter != 0 {
		t.Fatalf("third pass, nothing arriving: %d of %d told, requeue after %s; want all, no requeue", told, n, res.RequeueAfter)
	}
}

// TestWritePassTellsForAsLongAsItPlanned: a pass told to tell statuses for d (a part of the time it
// took to read and plan its routes, planToTell) tells for d at least before it yields to a new route (review43b: re-planning N routes for
// each few statuses made telling N statuses cost N²/8 routes planned while routes kept arriving).
func TestWritePassTellsForAsLongAsItPlanned(t *testing.T) {
	const d = 50 * time.Millisecond
	p := newWritePass(nil, func() bool { return true })
	p.tellFor = d
	start := time.Now()
	started := 0
	for i := range 100 * statusesBeforeYield {
		if !p.tell(tenantHTTPRoute(fmt.Sprint("r", i)), func() (bool, error) {
			time.Sleep(time.Millisecond)
			return true, nil
		}) {
			break
		}
		started++
	}
	p.wait()
	if took := time.Since(start); took < d || !p.yielded || started <= statusesBeforeYield {
		t.Errorf("%d statuses started over %s (yielded %v); want more than %d over %s at least, then a yield",
			started, took, p.yielded, statusesBeforeYield, d)
	}
}

// neverYield is a pass' yield where no route arrives.
func neverYield() bool { return false }

// TestWritePassTellsAFewAtATime: no more than statusWorkers statuses are in flight, and one the
// cache has not shown our last write of (skipped) frees its slot: every status is still started.
func TestWritePassTellsAFewAtATime(t *testing.T) {
	skipped := tenantHTTPRoute("skipped")
	skipped.SetResourceVersion("5")
	p := newWritePass(map[types.UID]string{skipped.GetUID(): "5"}, neverYield)
	var inFlight, most atomic.Int32
	for range statusWorkers + 1 {
		p.tell(skipped, func() (bool, error) { t.Error("a route the cache has not shown was written"); return true, nil })
	}
	n := 4 * statusWorkers
	for i := range n {
		p.tell(tenantHTTPRoute(fmt.Sprint("r", i)), func() (bool, error) {
			now := inFlight.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inFlight.Add(-1)
			return true, nil
		})
	}
	unseen, _ := p.wait()
	if got := most.Load(); got > statusWorkers || got < 2 {
		t.Errorf("%d statuses in flight at most, want 2 to %d", got, statusWorkers)
	}
	if len(unseen) != n+1 {
		t.Errorf("%d routes written or skipped, want %d", len(unseen), n+1)
	}
}
