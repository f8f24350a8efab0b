package cistatus_test

import (
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestStatusWaitsForRecords: a status write waits (requeued) until the cluster's parts settled
// (1 s after the newest post) and while records wait to be written, at most maxYield (3 s) after
// its oldest unwritten change; a cluster's first status never waits.
func TestStatusWaitsForRecords(t *testing.T) {
	e := newWriterEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	e.board.SetClock(clk)
	var pending atomic.Bool
	pending.Store(true)
	e.board.SetYield(func() time.Duration {
		if pending.Load() {
			return 1500 * time.Millisecond
		}
		return 0
	})

	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)(s)
	})
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 0 || e.get(t).Status.Domain != "c.z.test" {
		t.Fatalf("first status held back (%+v): %+v", res, e.get(t).Status)
	}

	routes := func(n int32) func(*v1alpha1.ClusterIngressStatus) {
		return func(s *v1alpha1.ClusterIngressStatus) { s.Routes = n }
	}
	e.post(t, cistatus.Allocation, routes(7))
	clk.Step(time.Second)
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 1500*time.Millisecond ||
		e.get(t).Status.Routes != 0 {
		t.Fatalf("written while records wait (%+v): routes %d", res, e.get(t).Status.Routes)
	}
	clk.Step(8 * time.Second) // the wait never runs past the bound
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != time.Second {
		t.Fatalf("9 s after the post the write waits %s, past the 10-s bound", res.RequeueAfter)
	}
	clk.Step(time.Second) // 10 s after the post: written however long the burst lasts
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 0 || e.get(t).Status.Routes != 7 {
		t.Fatalf("held past the bound (%+v): routes %d", res, e.get(t).Status.Routes)
	}

	e.post(t, cistatus.Allocation, routes(8))
	pending.Store(false)
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != time.Second || e.get(t).Status.Routes != 7 {
		t.Fatalf("written before the parts settled (%+v): routes %d", res, e.get(t).Status.Routes)
	}
	clk.Step(600 * time.Millisecond)
	e.post(t, cistatus.Allocation, routes(9)) // a new post starts the settling again
	clk.Step(600 * time.Millisecond)
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 400*time.Millisecond {
		t.Fatalf("the settling does not follow the newest post: %+v", res)
	}
	clk.Step(400 * time.Millisecond)
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 0 || e.get(t).Status.Routes != 9 {
		t.Fatalf("not written once settled and no records wait (%+v): routes %d", res, e.get(t).Status.Routes)
	}
}
