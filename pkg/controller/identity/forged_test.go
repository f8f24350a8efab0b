package identity

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// TestForgedDNSEndpointTakesNoDomain (the identity review's finding): victim (namespace V) holds
// vict. S, in its own namespace, registers cluster foo with the victim's ID (annotation: ClusterIDConflict, as
// it should) and writes a DNSEndpoint foo with Shardgate's label, a controller reference to its
// own ClusterIngress foo and records *.vict.<zone>. It blocks nothing while the victim holds. Then
// the operator restores the seed from a backup without status (or the victim's status is lost any
// other way): the victim, older, asks for vict again. A cluster's records are read from its status,
// which S cannot write, never from a DNSEndpoint: the older victim gets vict back, S's cluster
// nothing.
func TestForgedDNSEndpointTakesNoDomain(t *testing.T) {
	e := newEnv(t)
	victim := e.cluster("victim", "vict")
	e.until(victim, domain("vict"), v1alpha1.ReasonDomainHeld, "")

	time.Sleep(1100 * time.Millisecond)
	attackerNS := controllertest.Namespace(t, e.c)
	victimNS := e.ns
	e.ns = attackerNS
	foo := e.cluster("foo", "vict")
	e.until(foo, "", v1alpha1.ReasonClusterIDConflict, victim.String(), victim)
	e.endpoint("foo", dnsrecords.EndpointLabels(attackerNS, "foo", 1), e.get(foo), records("vict")...)
	e.until(victim, domain("vict"), v1alpha1.ReasonDomainHeld, "", foo)
	e.ns = victimNS

	// The victim's status is lost (restore without status).
	ci := e.get(victim)
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Status = v1alpha1.ClusterIngressStatus{}
	if err := e.c.Status().Patch(e.ctx, ci, patch); err != nil {
		t.Fatal(err)
	}
	e.restart()
	time.Sleep(time.Second) // the cache has the restored object
	all := []types.NamespacedName{victim, foo}
	for range 3 {
		for _, k := range all {
			controllertest.Reconcile(t, e.r, k, 1)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if got := e.get(victim).Status.Domain; got != domain("vict") {
		t.Errorf("the older victim asks for vict again and gets %q (DomainAssigned %v)", got,
			e.get(victim).Status.Conditions)
	}
	if got := e.get(foo).Status.Domain; got == domain("vict") {
		t.Errorf("S's cluster %s now holds %s, taken from the older %s", foo, got, victim)
	}
}
