package dns

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
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
