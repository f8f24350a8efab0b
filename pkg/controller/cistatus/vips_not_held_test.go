package cistatus_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// TestVIPsAreNeverHeldForRecords (found by the attacker's review): a VIP shard's records are its
// VIPs, which the DNS controller hears of from the written status. While another cluster (O
// churning its nodes) keeps a record change queued, this cluster's new VIPs must still be written
// at once, or its records would wait with its status.
func TestVIPsAreNeverHeldForRecords(t *testing.T) {
	e := newWriterEnv(t)
	clk := clocktesting.NewFakeClock(time.Now())
	e.board.SetClock(clk)
	// Another cluster's nodes keep changing: the DNS controller always has a change queued.
	e.board.SetYield(func() time.Duration { return time.Second })

	e.post(t, cistatus.Identity, holdDomain)
	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		setCond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)(s)
	})
	controllertest.Reconcile(t, e.board, e.key, 1) // first status: never held
	before := e.get(t)

	e.post(t, cistatus.VIPs, func(s *v1alpha1.ClusterIngressStatus) {
		s.VIPs = []v1alpha1.ShardVIPs{{Shard: "default", Addresses: []v1alpha1.VIPAddress{{Address: "192.0.2.10", RouterID: 7}}}}
	})
	res := controllertest.Reconcile(t, e.board, e.key, 1)
	after := e.get(t)
	if predicates.VIPKey(before) == predicates.VIPKey(after) {
		t.Fatalf("a new VIP (a DNS record of this cluster) is held back by another cluster's queued record "+
			"changes (requeue %v): the DNS controller is not woken for it until the yield ends", res.RequeueAfter)
	}
}
