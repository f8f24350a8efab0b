package cistatus_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestRecreatedClusterIngressStartsWithoutTheOldOnesParts (attack review of the one status path):
// the board keys parts by namespace/name only. A controller whose reconcile read the
// ClusterIngress before it was deleted posts after the writer saw it gone (the writer's Forget
// ran already; nothing forgets again), and the entry lives on. When a ClusterIngress of the same
// name is created again (S deletes and re-creates its kubeconfig Secret or Cluster), its first
// status is composed from the dead object's parts: the old domain, targets and ready nodes, and
// the old routed-IP record, before any controller decided them for the new object (the DNS
// controller does not post for up to 30 s while the new cluster is contacted). The old part also
// makes the new object's first status look like a later one (lastWritten set), so it is held.
func TestRecreatedClusterIngressStartsWithoutTheOldOnesParts(t *testing.T) {
	e := publishedWriterEnv(t)
	ctx := context.Background()
	writeRouted(t, e.c, e.board, e, "192.0.2.1")

	old := e.get(t) // a reconcile of the routed-IP controller reads it ...
	e.board.Overlay(old)
	if err := e.c.Delete(ctx, e.get(t)); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.board, e.key, 1) // the writer sees it gone and forgets it
	e.board.Post(ctx, old, cistatus.RoutedIPs)     // ... and posts after that (its context is fine)
	e.board.Post(ctx, old, cistatus.DNS)           // so does a DNS reconcile in flight
	e.board.Post(ctx, old, cistatus.Identity)      // and an identity reconcile (the old domain)

	// Re-created under the same name, for another cluster ID.
	fresh := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: e.key.Namespace, Name: e.key.Name},
		Spec: *old.Spec.DeepCopy()}
	fresh.Spec.ClusterID = "d"
	fresh.Spec.DNS = v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, "")
	if err := e.c.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	// The new object's lifecycle controller posts first; the writer runs.
	e.post(t, cistatus.Lifecycle, setCond(v1alpha1.ConditionSourceAvailable, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent))
	controllertest.Reconcile(t, e.board, e.key, 1)
	got := e.get(t)
	if got.Status.Domain != "" || len(got.Status.RoutedIPs) != 0 {
		t.Fatalf("the new ClusterIngress (uid %s, cluster ID d) got the deleted one's status: domain %q, routed IPs %+v",
			got.UID, got.Status.Domain, got.Status.RoutedIPs)
	}
}
