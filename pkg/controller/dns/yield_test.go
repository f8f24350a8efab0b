package dns

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/identity"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// TestLoserOfTwoHoldersStopsPublishingTheWinnersNames (the identity review's finding): two status
// holders of c1.z.test (caches of two replicas lagging each other, the previous release beside
// this one during a rolling upgrade, a hand edit after a rollback) both published for it. The
// identity makes the younger let go and, once the older publishes the names too, yield: its
// records go, so that one DNSEndpoint publishes each name (external-dns would answer either's
// targets) and the younger's stale copies block nothing if the winner ever lets go.
func TestLoserOfTwoHoldersStopsPublishingTheWinnersNames(t *testing.T) {
	ready := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady,
			Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}}}
	mine := []dnsrecords.Endpoint{{DNSName: "*.c1.z.test", RecordType: "A", RecordTTL: 60,
		Targets: []string{"10.0.0.2"}}, {DNSName: "c1.z.test", RecordType: "A", RecordTTL: 60,
		Targets: []string{"10.0.0.2"}}}
	yielded := &metav1.Condition{Type: v1alpha1.ConditionDomainAssigned, Status: metav1.ConditionFalse,
		Reason:  v1alpha1.ReasonDomainYielded,
		Message: "c1.z.test is held by the cluster ns/older, which publishes its names"}
	d := Decide(Input{Domain: "c1.z.test", Spec: spec("c1", "z.test"), Held: false, Assigned: yielded,
		Engaged: true, Observed: true, CurrentExists: true, Current: mine,
		Shards: []dnsrecords.ShardInput{{Name: "default", Domain: "c1.z.test", Nodes: []corev1.Node{ready}}}})
	if !d.Write || len(d.Endpoints) != 0 || d.Plan == nil || len(d.Plan.Shards) != 0 {
		t.Errorf("a reachable cluster that lost c1.z.test to another publishing holder keeps its names: %+v", d)
	}
}

// TestYieldedClusterRemovesItsCopiesOnly: two status holders of one domain (an older release's
// replicas racing; made here by its merge patch), both publishing. The younger, not even engaged
// (its cluster cannot be reached), yields: its DNSEndpoint is emptied and its status no longer
// says it publishes; the older's records are untouched.
func TestYieldedClusterRemovesItsCopiesOnly(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	cached := controllertest.CachedClient(t, seed, identity.AddIndexes)
	clock := clocktesting.NewFakeClock(time.Now())
	r := withIdentity(&Reconciler{Client: cached, Access: access, ServedZones: []string{"dns.test"},
		Clock: clock, Board: cistatus.NewBoard(seed.Client).WriteThrough()})

	older := newCI(t, seed.Client, ns, "older", "c9")
	controllertest.UserCluster(access, older, readyNode("n1", "10.0.0.1"))
	controllertest.ReconcileUntil(t, r, older, publishedWith(t, seed.Client, older, v1alpha1.ReasonPublished))
	time.Sleep(1100 * time.Millisecond) // creation times have whole seconds
	twin := newCI(t, seed.Client, ns, "twin", "c9")

	heldByAnOlderRelease(t, seed.Client, twin, "c9")

	clock.Step(2 * firstStatusGrace) // a cluster still being contacted says nothing before
	controllertest.ReconcileUntil(t, r, twin, func() (bool, string) {
		controllertest.Reconcile(t, r, older, 1)
		ci, ep := get(t, seed.Client, twin)
		c := publishedOf(t, ci)
		return c != nil && c.Reason == v1alpha1.ReasonDomainYielded && ep != nil && len(ep.Spec.Endpoints) == 0 &&
				len(ci.Status.Shards) == 0 && ci.Status.Domain == "",
			fmt.Sprintf("twin: domain %q shards %v DNSPublished %+v endpoint %v", ci.Status.Domain, ci.Status.Shards,
				c, ep)
	})
	oci, oep := get(t, seed.Client, older)
	if oci.Status.Domain != "c9.dns.test" || oep == nil || len(oep.Spec.Endpoints) == 0 {
		t.Fatalf("the older holder was touched: %q %v", oci.Status.Domain, oep)
	}
	// Yielded once, it is just another cluster asking for a held ID: nothing more is written.
	controllertest.ReconcileUntil(t, r, twin, publishedWith(t, seed.Client, twin, v1alpha1.ReasonClusterIDConflict))
}

// heldByAnOlderRelease makes key a second status holder of id's domain, publishing it, as an
// older release's race leaves one: its DNSEndpoint with the records, and its status by merge patch.
func heldByAnOlderRelease(t *testing.T, c client.Client, key types.NamespacedName, id string) {
	t.Helper()
	ctx := context.Background()
	ci, _ := get(t, c, key)
	ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
		Labels: dnsrecords.EndpointLabels(key.Namespace, key.Name, 1)}}
	ep.Spec.Endpoints = []dnsrecords.Endpoint{{DNSName: "*." + id + ".dns.test", RecordType: "A", RecordTTL: 60,
		Targets: []string{"10.9.9.9"}}}
	if err := controllerutil.SetControllerReference(ci, ep, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Status.ClusterID, ci.Status.Domain = id, id+".dns.test"
	ci.Status.Shards = []v1alpha1.ShardStatus{{Name: "default", Domain: id + ".dns.test", Targets: []string{"10.9.9.9"}}}
	if err := c.Status().Patch(ctx, ci, patch, client.FieldOwner("seed-controller")); err != nil {
		t.Fatal(err)
	}
}
