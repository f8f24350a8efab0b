package cistatus_test

import (
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/controllertest"
)

// TestStatusWaitsForRecords: while records wait to be written, a status write waits (requeued),
// for at most maxYield (3 s) after its change was posted; a cluster's first status never waits.
func TestStatusWaitsForRecords(t *testing.T) {
	e := newWriterEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	e.board.SetClock(clk)
	var pending atomic.Bool
	pending.Store(true)
	e.board.SetYield(pending.Load)

	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		s.Domain = "c.z.test"
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
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter == 0 || e.get(t).Status.Routes != 0 {
		t.Fatalf("written while records wait (%+v): routes %d", res, e.get(t).Status.Routes)
	}
	clk.Step(2 * time.Second) // 3 s after the post: written however long the burst lasts
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 0 || e.get(t).Status.Routes != 7 {
		t.Fatalf("held past the bound (%+v): routes %d", res, e.get(t).Status.Routes)
	}

	e.post(t, cistatus.Allocation, routes(8))
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter == 0 {
		t.Fatalf("a new change is held again from its own post: %+v", res)
	}
	pending.Store(false)
	if res := controllertest.Reconcile(t, e.board, e.key, 1); res.RequeueAfter != 0 || e.get(t).Status.Routes != 8 {
		t.Fatalf("not written once the records are (%+v): routes %d", res, e.get(t).Status.Routes)
	}
}
