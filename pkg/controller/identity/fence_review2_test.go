package identity

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReview2StaleOwnLeaseGivesADomainTwice (operator at 3 a.m.: a replica restart; S times its
// cluster's ID change).
//
// grantInFlight is measured from the Lease's RenewTime, set only when a Lease is created or
// taken over. Take returns true at once for a cluster the Lease already names, without renewing
// it. So a cluster that took a domain's Lease and whose grant never landed (its replica died
// before the status write) is granted again later on the strength of a Lease whose in-flight
// window is long over: while that second grant's status write is on its way, another replica
// takes the Lease over (the named cluster neither holds nor publishes, and its RenewTime is
// stale) and grants the domain too. Both status writes land: two holders of one domain, which
// the fence exists to prevent (TestTwoReplicasNeverGrantOneDomainTwice without the crash).
//
// Fix: renew RenewTime (Update with the optimistic lock) when Take finds the Lease already names
// self, so every grant starts its own in-flight window and a concurrent takeover conflicts.
func TestReview2StaleOwnLeaseGivesADomainTwice(t *testing.T) {
	e := newEnv(t)
	rb := e.replica(e.r.Client)
	b := e.cluster("r2-b", "r2-b-first")
	controllertest.ReconcileUntil(t, rb, b, func() (bool, string) {
		return e.get(b).Status.Domain == domain("r2-b-first"), "b holds its first domain"
	})
	time.Sleep(1100 * time.Millisecond) // b is the older cluster

	a := e.cluster("r2-a", "r2-race")
	e.cached(a, func(ci *v1alpha1.ClusterIngress) bool { return ci.Spec.ClusterID == "r2-race" })
	// Replica 1 grants a (takes the Lease) and dies before its status write.
	crashed := e.replica(e.r.Client)
	crashed.Board = cistatus.NewBoard(e.c) // posts are written by the board's writer, never run here
	if _, err := crashed.Reconcile(e.ctx, reqFor(a)); err != nil {
		t.Fatal(err)
	}
	if got := e.get(a).Status.Domain; got != "" {
		t.Fatalf("the crashed replica's grant must not be written: a holds %q", got)
	}
	time.Sleep(grantInFlight + time.Second) // the restart

	// b now asks for r2-race too; the restarted replica 1 has not seen that yet.
	e.askFor(b, "r2-race")
	e.cached(b, func(ci *v1alpha1.ClusterIngress) bool { return ci.Spec.ClusterID == "r2-race" })
	r1 := e.replica(lagging{Client: e.r.Client, hidden: b})
	r1.Board = cistatus.NewBoard(e.c) // its status write is in flight
	if _, err := r1.Reconcile(e.ctx, reqFor(a)); err != nil {
		t.Fatal(err)
	}
	// Replica 2 decides b meanwhile (b is the older requester).
	r2 := e.replica(e.r.Client)
	if _, err := r2.Reconcile(e.ctx, reqFor(b)); err != nil {
		t.Fatal(err)
	}
	// Replica 1's status write lands.
	ci := e.get(a)
	r1.Board.Overlay(ci)
	if err := r1.Board.Write(e.ctx, ci, cistatus.Identity); err != nil {
		t.Fatal(err)
	}
	if da, db := e.get(a).Status.Domain, e.get(b).Status.Domain; da == domain("r2-race") && db == da {
		t.Fatalf("two replicas gave %s to both %s and %s (the Lease's in-flight window was a's first, stale take)",
			da, a, b)
	}
}
