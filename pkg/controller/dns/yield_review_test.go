package dns

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReviewYieldNeverLeavesTheNamesUnanswered (the operator: two status holders — the case
// DomainYielded exists for — and a refused DNSEndpoint write on the winner's side).
//
// The winner's DNS controller plans its records, records the plan in status.shards and only
// then creates its DNSEndpoint; the create is refused and the status saying it publishes is
// posted anyway. The identity reads "the winner publishes the names" from that status, so the
// loser yields and its DNSEndpoint is emptied: no DNSEndpoint publishes c9r.dns.test any more, for
// as long as the winner's write fails. The promise broken: names are never left unanswered
// because of a contest; records are never removed because something could not be written.
//
// What should happen: the loser keeps its copies until the winner's records exist; status.shards
// must say what the DNSEndpoint holds, not what was planned.
func TestReviewYieldNeverLeavesTheNamesUnanswered(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	refuse := &atomic.Bool{}
	refuse.Store(true)
	clock := clocktesting.NewFakeClock(time.Now())
	older := types.NamespacedName{Namespace: ns, Name: "older"}
	r := withIdentity(&Reconciler{Client: refusingWrites{Client: cached, key: older, on: refuse}, Access: access,
		ServedZones: []string{"dns.test"}, Clock: clock, Board: cistatus.NewBoard(seed.Client).WriteThrough()})

	older = newCI(t, seed.Client, ns, "older", "c9r")
	controllertest.UserCluster(access, older, readyNode("n1", "10.0.0.1"))
	clock.Step(2 * firstStatusGrace) // a cluster's first status waits for it to be contacted
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: older}) // the create is refused
		ci, _ := get(t, seed.Client, older)
		if c := publishedOf(t, ci); ci.Status.Domain == "c9r.dns.test" && c != nil &&
			c.Reason == v1alpha1.ReasonDNSWriteFailed {
			if len(ci.Status.Shards) > 0 {
				t.Fatalf("older's status says it publishes although its DNSEndpoint was never created: %+v",
					ci.Status.Shards)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("older: %+v", ci.Status)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	twin := newCI(t, seed.Client, ns, "twin", "c9r")

	// An older release gave twin the domain too; its records are the only ones out there.
	heldByAnOlderRelease(t, seed.Client, twin, "c9r")
	clock.Step(2 * firstStatusGrace)

	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: older})
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: twin})
		_, oep := get(t, seed.Client, older)
		_, tep := get(t, seed.Client, twin)
		if !publishesUnder(oep, "c9r.dns.test") && !publishesUnder(tep, "c9r.dns.test") {
			tci, _ := get(t, seed.Client, twin)
			t.Fatalf("no DNSEndpoint publishes c9r.dns.test any more: older's %s, twin's %s (twin: %s)",
				endpointsOf(oep), endpointsOf(tep), fmt.Sprint(publishedOf(t, tci)))
		}
	}
}
