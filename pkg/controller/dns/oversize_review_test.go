package dns

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReviewOwnerCannotHideItsRecordsFromTheIdentity (attacker O, who is also S of its own seed
// namespace, as with Cluster API multi-tenancy; plus an ordinary restart or a second replica).
//
// O gives its cluster x 2,500 nodes with long names: the DNS controller's part of the status
// (readyNodes, per shard again) is past the writer's 512 KiB budget and is left out of every
// write, so status.shards in the API server never says that x publishes old.dns.test, while x's
// DNSEndpoint does. The identity part is small and written. O then moves x to a new ID (its
// Cluster's annotation) and makes x unreachable: the DNSEndpoint keeps old.dns.test's names
// (StaleRecordsKept), which by design blocks old.dns.test for everyone. But the identity reads
// "publishes" only from status.shards: a replica whose board did not see x's refused part (any
// other replica, or this one after a restart) finds old.dns.test free and gives it to the next
// cluster asking, w, which publishes the same names. From then on external-dns answers w's names
// with O's targets too: O's input takes over part of another cluster's traffic.
//
// What should happen: w must not get old.dns.test while x's records are under it. What a cluster
// publishes must be recorded where a refused status part cannot drop it (a bounded record of the
// published domains in the identity's own part, say, or never leaving out the shards' domains).
func TestReviewOwnerCannotHideItsRecordsFromTheIdentity(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	newReplica := func() dnsAndIdentity {
		return withIdentity(&Reconciler{Client: cached, Access: access, ServedZones: []string{"dns.test"},
			Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(seed.Client).WriteThrough()})
	}
	r := newReplica()

	x := newCI(t, seed.Client, ns, "x", "old")
	var nodes []client.Object
	for i := range 2500 {
		nodes = append(nodes, readyNode(fmt.Sprintf("%s-%05d", strings.Repeat("n", 230), i),
			fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)))
	}
	user := controllertest.UserCluster(access, x, nodes...)
	controllertest.ReconcileUntil(t, r, x, func() (bool, string) {
		ci, ep := get(t, seed.Client, x)
		return ci.Status.Domain == "old.dns.test" && publishesUnder(ep, "old.dns.test"),
			fmt.Sprintf("domain %q records %s", ci.Status.Domain, endpointsOf(ep))
	})
	// The DNS part is past the budget: its lists are cut, the shards' domains written all the same.
	controllertest.ReconcileUntil(t, r, x, func() (bool, string) {
		ci, _ := get(t, seed.Client, x)
		ok := len(ci.Status.Shards) == 1 && ci.Status.Shards[0].Domain == "old.dns.test" &&
			len(ci.Status.Shards[0].Targets) > 0 && ci.Status.ReadyNodeCount == 2500
		return ok, fmt.Sprintf("shards %d, readyNodeCount %d", len(ci.Status.Shards), ci.Status.ReadyNodeCount)
	})

	// The move, the cluster unreachable.
	user.St = clusteraccess.State{Phase: clusteraccess.PhaseUnreachable,
		Reason: string(clusteraccess.FailureUnreachable), Message: "timed out"}
	ci, _ := get(t, seed.Client, x)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Spec.ClusterID = "new"
	if err := seed.Client.Patch(ctx, ci, patch); err != nil {
		t.Fatal(err)
	}
	controllertest.ReconcileUntil(t, r, x, func() (bool, string) {
		ci, _ := get(t, seed.Client, x)
		return ci.Status.Domain == "new.dns.test", "x holds " + ci.Status.Domain
	})

	// Another replica (or this one restarted) and a newcomer asking for old.
	r2 := newReplica()
	w := newCI(t, seed.Client, ns, "w", "old")
	controllertest.UserCluster(access, w, readyNode("w1", "10.7.7.7"))
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		controllertest.Reconcile(t, r2, w, 1)
		_, xep := get(t, seed.Client, x)
		wci, wep := get(t, seed.Client, w)
		if publishesUnder(xep, "old.dns.test") && (wci.Status.Domain == "old.dns.test" || publishesUnder(wep, "old.dns.test")) {
			t.Fatalf("x's DNSEndpoint still publishes old.dns.test and w was given it: w holds %q, w's records %s",
				wci.Status.Domain, endpointsOf(wep))
		}
	}
}
