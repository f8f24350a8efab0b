package identity

import (
	"fmt"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestReviewDomainLeasesDoNotPileUp (attacker S: edits the shardgate.io/cluster-id annotation
// of its own Cluster as often as it likes).
//
// With several replicas every grant of a new domain creates the Lease "domain-<hash>" in the
// replicas' namespace, and nothing ever deletes one ("the Lease needs no release"). S cycling its
// one cluster through fresh IDs leaves one Lease per ID it ever held: an unbounded number of
// objects in Shardgate's own namespace (etcd, every cache of Leases there, a count quota on the
// namespace that the replicas' own fence Leases then hit).
//
// What should happen: the number of domain Leases stays bounded by the domains held or asked
// for; a Lease whose cluster no longer claims its domain is deleted (by the cluster that gave the
// domain up, or by a sweep), with the same optimistic lock as a take-over.
func TestReviewDomainLeasesDoNotPileUp(t *testing.T) {
	e := newEnv(t)
	r := e.replica(e.r.Client)
	k := e.cluster("cycler", "id-0")
	const moves = 8
	for i := range moves {
		id := fmt.Sprintf("id-%d", i)
		if i > 0 {
			e.askFor(k, id)
		}
		controllertest.ReconcileUntil(t, r, k, func() (bool, string) {
			got := e.get(k).Status.Domain
			return got == domain(id), "holds " + got
		})
	}
	leases := &coordinationv1.LeaseList{}
	if err := e.c.List(e.ctx, leases, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, "domain-") {
			n++
		}
	}
	if n > 2 {
		t.Fatalf("one cluster that moved through %d IDs left %d domain Leases in the replicas' namespace", moves, n)
	}
}
