package dns

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// TestReviewRefusedRecordWriteNeverFreesTheOldDomain (the operator at 3 a.m.: the seed API server
// restarting, or any refusal of the DNSEndpoint update; S waiting with a cluster that asks for
// the ID).
//
// mover holds wf-old.dns.test and publishes it; waiter (S's cluster) asks for the same ID and waits
// with ClusterIDConflict. mover's owner moves it to a new ID. The DNS controller plans the new
// domain's records, puts that plan in status.shards (recordPlan) and only then writes the
// DNSEndpoint — the write is refused, and the status with the new shards is posted anyway. The
// identity controller reads "what a cluster publishes" from status.shards only, so wf-old.dns.test
// looks free although mover's DNSEndpoint still publishes every name under it: waiter is given the
// domain and its DNS controller publishes the same names to S's nodes. Two clusters publish one
// domain, for as long as mover's write keeps failing (backoff, or forever for a persistent
// refusal), and external-dns answers either's targets.
//
// What should happen: status.shards (the identity's evidence) must never run ahead of the
// DNSEndpoint: on a failed write, post the shards the DNSEndpoint still holds (record the plan
// only after the write succeeded), so the old domain stays blocked until the names are gone.
func TestReviewRefusedRecordWriteNeverFreesTheOldDomain(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	refuse := &atomic.Bool{}
	mover := types.NamespacedName{Namespace: ns, Name: "mover"}
	r := withIdentity(&Reconciler{Client: refusingWrites{Client: cached, key: mover, on: refuse}, Access: access,
		ServedZones: []string{"dns.test"}, Clock: clocktesting.NewFakeClock(time.Now()),
		Board: cistatus.NewBoard(seed.Client).WriteThrough()})

	mover = newCI(t, seed.Client, ns, "mover", "wf-old")
	controllertest.UserCluster(access, mover, readyNode("n1", "10.0.0.1"))
	controllertest.ReconcileUntil(t, r, mover, publishedWith(t, seed.Client, mover, v1alpha1.ReasonPublished))
	time.Sleep(1100 * time.Millisecond)
	waiter := newCI(t, seed.Client, ns, "waiter", "wf-old")
	controllertest.UserCluster(access, waiter, readyNode("s1", "10.6.6.6"))
	controllertest.ReconcileUntil(t, r, waiter, publishedWith(t, seed.Client, waiter, v1alpha1.ReasonClusterIDConflict))

	// The move, while the DNSEndpoint update is refused.
	refuse.Store(true)
	ci, _ := get(t, seed.Client, mover)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Spec.ClusterID = "wf-new"
	if err := seed.Client.Patch(ctx, ci, patch); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: mover}) // fails: the write is refused
		if ci, _ := get(t, seed.Client, mover); ci.Status.Domain == "wf-new.dns.test" {
			break
		}
	}

	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		controllertest.Reconcile(t, r, waiter, 1)
		_, mep := get(t, seed.Client, mover)
		wci, wep := get(t, seed.Client, waiter)
		if publishesUnder(mep, "wf-old.dns.test") && (wci.Status.Domain == "wf-old.dns.test" || publishesUnder(wep, "wf-old.dns.test")) {
			t.Fatalf("mover's DNSEndpoint still publishes wf-old.dns.test (%v) and waiter was given it: domain %q, "+
				"records %v", mep.Spec.Endpoints, wci.Status.Domain, endpointsOf(wep))
		}
	}
}

func publishesUnder(ep *dnsrecords.DNSEndpoint, domain string) bool {
	if ep == nil {
		return false
	}
	for _, e := range ep.Spec.Endpoints {
		if e.DNSName == domain || strings.HasSuffix(e.DNSName, "."+domain) {
			return true
		}
	}
	return false
}

func endpointsOf(ep *dnsrecords.DNSEndpoint) string {
	if ep == nil {
		return "none"
	}
	return fmt.Sprint(ep.Spec.Endpoints)
}
