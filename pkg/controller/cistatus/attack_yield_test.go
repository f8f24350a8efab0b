package cistatus_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestHeldWriteNeverRequeuedPastMaxYield (attack review of the one status path): a held status
// write is written at most maxYield (10 s) after its oldest unwritten change. A part that keeps
// changing (O churning its own nodes changes the DNS part every few hundred milliseconds) resets
// the settle period; when the last change lands just before the bound, the settle wait
// (settleDelay - quiet) is returned without being capped at the bound, so the write goes up to a
// second past it.
func TestHeldWriteNeverRequeuedPastMaxYield(t *testing.T) {
	e := newWriterEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	e.board.SetClock(clk)
	e.board.SetYield(func() time.Duration { return 0 }) // no record waits: only the settling holds

	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)(s)
	})
	controllertest.Reconcile(t, e.board, e.key, 1) // first status, written at once

	start := clk.Now()
	e.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = 1 })
	// The part keeps changing (every 500 ms, each less than settleDelay after the last) ...
	for i := int32(2); clk.Since(start) < 9500*time.Millisecond; i++ {
		clk.Step(500 * time.Millisecond)
		e.post(t, cistatus.Allocation, func(s *v1alpha1.ClusterIngressStatus) { s.Routes = i })
	}
	// ... and the writer, woken by the last post (t=9.5 s), asks to be called again.
	res := controllertest.Reconcile(t, e.board, e.key, 1)
	deadline := start.Add(10 * time.Second)
	if wake := clk.Now().Add(res.RequeueAfter); wake.After(deadline) {
		t.Fatalf("oldest unwritten change posted at t=0; the writer requeues to t=%s, past the 10-s bound (maxYield)",
			wake.Sub(start))
	}
}
