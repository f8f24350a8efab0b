package identity

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReviewRestoreWithoutStatusKeepsTheHoldersDomain (the operator restoring the seed from a
// backup without status, with S's help).
//
// Before the backup, the victim holds prod.<zone> and publishes it (status.domain,
// status.shards); S's cluster a-attacker asks for the same ID and waits with ClusterIDConflict.
// A restore (Velero and the like) creates every object anew: no status (a subresource), and
// creation times of the restore, in the restore's order (alphabetical here, or the same second
// with ties by namespace/name, which S picks). The victim's DNSEndpoint comes back with its
// records. Everything clusterid.Holder decides from is then gone but the ages: the holder is now
// just one of two requesters, and the "oldest" is whoever was restored first: S's cluster is
// given prod, and its DNS controller publishes the victim's names to S's nodes, beside the
// victim's restored DNSEndpoint with the same names (two clusters publishing one domain), while
// the victim is told ClusterIDConflict.
//
// What should happen: the restore loses nothing: the victim keeps prod. The holding must be kept
// somewhere a restore without status brings back and S cannot write — e.g. an annotation on the
// ClusterIngress itself (S has no write on ClusterIngresses) that the identity controller sets
// with status.domain and reads as "Holds" when status is empty.
func TestReviewRestoreWithoutStatusKeepsTheHoldersDomain(t *testing.T) {
	e := newEnv(t)
	victim := e.cluster("b-victim", "prod")
	e.until(victim, domain("prod"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(victim, domain("prod"))
	time.Sleep(1100 * time.Millisecond)
	attacker := e.cluster("a-attacker", "prod")
	e.until(attacker, "", v1alpha1.ReasonClusterIDConflict, victim.String(), victim)

	// The restore: both objects created anew (the attacker's first), without status; the
	// victim's DNSEndpoint with its records.
	for _, k := range []types.NamespacedName{attacker, victim} {
		if err := e.c.Delete(e.ctx, e.get(k)); err != nil {
			t.Fatal(err)
		}
		for {
			if err := e.c.Get(e.ctx, k, &v1alpha1.ClusterIngress{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	e.restart()
	attacker = e.cluster("a-attacker", "prod")
	victim = e.cluster("b-victim", "prod")
	e.endpoint("b-victim", map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}, e.get(victim),
		records("prod")...)
	e.cached(victim, func(*v1alpha1.ClusterIngress) bool { return true })
	e.cached(attacker, func(*v1alpha1.ClusterIngress) bool { return true })

	e.until(victim, domain("prod"), v1alpha1.ReasonDomainHeld, "", attacker)
	if got := e.get(attacker).Status.Domain; got == domain("prod") {
		t.Fatalf("S's cluster holds the victim's domain after the restore")
	}
}

// TestReviewRestoreWithSeveralReplicasLeavesTheDomainToNobody: the same restore with several
// replicas, the domain Leases restored with the namespace they live in (the victim took prod's
// Lease when it was granted). The attacker, restored first, is now the "oldest" requester, so the
// victim's own reconcile gives prod to the attacker; the attacker's grant is refused by the Lease
// (the victim asks for prod): neither ever holds it (the deadlock of
// TestReviewLeaseOfARequesterDeadlocksAFreeDomain). The victim's records are kept, but frozen:
// DNSPublished says ClusterIDConflict and its targets no longer follow its nodes.
//
// What should happen: the victim holds prod again.
func TestReviewRestoreWithSeveralReplicasLeavesTheDomainToNobody(t *testing.T) {
	e := newEnv(t)
	e.r = e.replica(e.r.Client)
	victim := e.cluster("b-victim", "prod")
	e.until(victim, domain("prod"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(victim, domain("prod"))
	time.Sleep(1100 * time.Millisecond)
	attacker := e.cluster("a-attacker", "prod")
	e.until(attacker, "", v1alpha1.ReasonClusterIDConflict, victim.String(), victim)

	for _, k := range []types.NamespacedName{attacker, victim} {
		if err := e.c.Delete(e.ctx, e.get(k)); err != nil {
			t.Fatal(err)
		}
		for {
			if err := e.c.Get(e.ctx, k, &v1alpha1.ClusterIngress{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	e.r = e.replica(e.r.Client) // a new process: a new board
	attacker = e.cluster("a-attacker", "prod")
	victim = e.cluster("b-victim", "prod")
	e.cached(victim, func(*v1alpha1.ClusterIngress) bool { return true })
	e.cached(attacker, func(*v1alpha1.ClusterIngress) bool { return true })

	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		controllertest.Reconcile(t, e.r, attacker, 1)
		controllertest.Reconcile(t, e.r, victim, 1)
	}
	if got := e.get(victim).Status.Domain; got != domain("prod") {
		vc, ac := assignedOf(e, victim), assignedOf(e, attacker)
		t.Fatalf("after the restore the victim holds %q (%s: %s); the attacker holds %q (%s: %s)", got, vc.Reason,
			vc.Message, e.get(attacker).Status.Domain, ac.Reason, ac.Message)
	}
}
