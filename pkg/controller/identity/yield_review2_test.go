package identity

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReview2YieldOnlyForNamesTheWinnerPublishes (operator: two status holders after an older
// release's race or a hand edit; the two clusters' profiles name different shards).
//
// DomainYielded empties the loser's whole DNSEndpoint when the winner "publishes" the domain, but
// "publishes" is PublishedDomains, which holds every parent name of every shard domain: a winner
// with one shard under the domain counts as publishing every name under it. The loser's names
// under a shard domain the winner has no records for (here y-only.<domain>) are removed while
// nobody else answers them, against "its copies of the names are removed only once the older
// publishes them; names are never left unanswered because of a contest".
//
// Fix: yield only when each of the loser's shard domains (status.shards with targets) is among
// the winner's, or empty only the copies (the records whose names the winner publishes).
func TestReview2YieldOnlyForNamesTheWinnerPublishes(t *testing.T) {
	e := newEnv(t)
	winner := e.cluster("r2-winner", "r2-dup")
	e.until(winner, domain("r2-dup"), v1alpha1.ReasonDomainHeld, "")
	e.publishes(winner, "w-only."+domain("r2-dup"))
	time.Sleep(1100 * time.Millisecond) // the loser is younger
	loser := e.cluster("r2-loser", "r2-dup")
	ci := e.get(loser)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Status.ClusterID, ci.Status.Domain = "r2-dup", domain("r2-dup") // the older release's race
	if err := e.c.Status().Patch(e.ctx, ci, patch, client.FieldOwner("seed-controller")); err != nil {
		t.Fatal(err)
	}
	e.publishes(loser, "y-only."+domain("r2-dup"))
	e.cached(loser, func(ci *v1alpha1.ClusterIngress) bool { return ci.Status.Domain == domain("r2-dup") })
	e.cached(winner, func(ci *v1alpha1.ClusterIngress) bool { return len(ci.Status.Shards) == 1 })

	controllertest.ReconcileUntil(t, e.r, loser, func() (bool, string) {
		return e.get(loser).Status.Domain == "", "the younger status holder lets go"
	})
	c := meta.FindStatusCondition(e.get(loser).Status.Conditions, v1alpha1.ConditionDomainAssigned)
	if c != nil && c.Reason == v1alpha1.ReasonDomainYielded {
		t.Fatalf("the loser yields (its DNSEndpoint is emptied) though the winner publishes none of its names "+
			"(winner: w-only.%s, loser: y-only.%s): %s", domain("r2-dup"), domain("r2-dup"), c.Message)
	}
}
