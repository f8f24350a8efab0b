package identity

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReviewLeaseOfARequesterDeadlocksAFreeDomain (attacker S, or the operator's replica that
// crashes between taking a domain's Lease and writing the status it granted).
//
// The attack: S's cluster x once held domain "shared" (its Lease names x), then moved to another
// ID, leaving "shared" free. The victim v, an older cluster, asks for "shared", and S at the same
// time makes x ask for it again. By clusterid.Holder the oldest requester, v, gets it: x's own
// reconcile says so (x gets ClusterIDConflict and stays put). But v's grant goes through the
// domain's Lease, which still names x, and DomainFence.claims counts a mere request as a claim:
// v is refused ("held by x"). Neither ever holds "shared": S blocks a free domain for the cluster
// the holder rule gives it to, for as long as x keeps asking. The same deadlock follows a replica
// that took the Lease and died before the status write (the Lease-holder then only asks, and an
// older requester arrives).
//
// What should happen: one of them holds the domain; the Lease must not protect a cluster that
// neither holds nor publishes the domain against the cluster the holder rule picks (e.g. a
// requester protects its Lease only for a short time after taking it, while its grant's status
// write is in flight, or only while it is itself the Holder among the claims).
func TestReviewLeaseOfARequesterDeadlocksAFreeDomain(t *testing.T) {
	e := newEnv(t)
	r := e.replica(e.r.Client) // one of several replicas: grants go through the domain's Lease
	holds := func(k types.NamespacedName, d string) {
		t.Helper()
		controllertest.ReconcileUntil(t, r, k, func() (bool, string) {
			got := e.get(k).Status.Domain
			return got == d, fmt.Sprintf("%s holds %q, want %q", k, got, d)
		})
	}
	victim := e.cluster("victim", "victim-first")
	holds(victim, domain("victim-first"))
	time.Sleep(1100 * time.Millisecond) // the victim is the older cluster
	x := e.cluster("x", "shared")
	holds(x, domain("shared")) // the Lease of shared now names x
	e.askFor(x, "x-next")
	holds(x, domain("x-next")) // shared is free again (x never published under it)

	// Both ask for shared now.
	e.askFor(x, "shared")
	e.askFor(victim, "shared")
	e.cached(x, func(ci *v1alpha1.ClusterIngress) bool { return ci.Spec.ClusterID == "shared" })
	e.cached(victim, func(ci *v1alpha1.ClusterIngress) bool { return ci.Spec.ClusterID == "shared" })

	deadline := time.Now().Add(2 * grantInFlight)
	for {
		controllertest.Reconcile(t, r, x, 1)
		controllertest.Reconcile(t, r, victim, 1)
		if e.get(victim).Status.Domain == domain("shared") || e.get(x).Status.Domain == domain("shared") {
			return
		}
		if time.Now().After(deadline) {
			vc, xc := assignedOf(e, victim), assignedOf(e, x)
			t.Fatalf("nobody ever holds the free domain %s: victim holds %q (%s: %s), x holds %q (%s: %s)",
				domain("shared"), e.get(victim).Status.Domain, vc.Reason, vc.Message,
				e.get(x).Status.Domain, xc.Reason, xc.Message)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func assignedOf(e *env, k types.NamespacedName) (c struct{ Reason, Message string }) {
	for _, cond := range e.get(k).Status.Conditions {
		if cond.Type == v1alpha1.ConditionDomainAssigned {
			c.Reason, c.Message = cond.Reason, cond.Message
		}
	}
	return c
}
