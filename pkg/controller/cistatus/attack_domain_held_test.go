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

// TestReleasedDomainIsNeverHeldForRecords (attack review of the one status path): another
// cluster's records follow this cluster's written status.domain too. The identity controller decides
// who holds a domain from the cached status of every ClusterIngress asking for or holding it
// (clusterid.Holder: a held status.domain wins) and wakes the others when it changes. When
// cluster A gives a domain up (S changes its cluster-ID annotation), cluster B, waiting in
// ClusterIDConflict for that domain, gets its records only once A's new status.domain is
// written. The identity part is not a recordInputs part, so while a third cluster (O churning nodes)
// keeps a record change queued, A's release is held up to 10 s, and B's records with it: one
// cluster's churn delays another's records, which the docs say never happens.
func TestReleasedDomainIsNeverHeldForRecords(t *testing.T) {
	e := newWriterEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	e.board.SetClock(clk)
	e.board.SetYield(func() time.Duration { return time.Second }) // O's nodes keep changing

	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable))
	controllertest.Reconcile(t, e.board, e.key, 1) // first status: never held

	// A's cluster ID moves to "y": its identity controller gives it y.z.test and c.z.test up.
	e.post(t, cistatus.Identity, func(s *v1alpha1.ClusterIngressStatus) { s.ClusterID, s.Domain = "y", "y.z.test" })
	clk.Step(time.Second) // settled
	res := controllertest.Reconcile(t, e.board, e.key, 1)
	if got := e.get(t).Status.Domain; got != "y.z.test" {
		t.Fatalf("the release of c.z.test is held (requeue %v; status.domain still %q): the cluster waiting for c.z.test "+
			"gets no records until another cluster's record changes are out, up to 10 s", res.RequeueAfter, got)
	}
}
