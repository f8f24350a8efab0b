package shards

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview34AdmittedFlavourChangeWakesTheShardsController: the allocation controller admits a
// held flavour change by writing status.shardFlavours (its status part, through the board); that
// write changes what ClusterIngress.Shards() renders (heavy: Traefik -> HAProxy), yet the shards
// controller's ClusterIngress predicate (add.go's clusterIngressChanges) did not pass that update, and the shards controller requeues nothing periodically. In a quiet
// cluster (no router pod, node label or managed-object event) the admitted change is never
// rolled out, while FlavourChangesHeld is gone and status.shards soon reports heavy as HAProxy
// (the DNS controller reads ci.Shards()): status says haproxy, the routers still run Traefik.
// The admission policy's HAProxy guards, rendered by the same controller, wait just as long.
//
// Correct: an update that changes ClusterIngress.Shards() (status.shardFlavours) wakes the shards
// controller (a predicate on the running shards, as ClaimsChanged is for status.claims).
func TestReview34AdmittedFlavourChangeWakesTheShardsController(t *testing.T) {
	shardsPredicate := clusterIngressChanges
	spec := v1alpha1.ClusterIngressSpec{Shards: []v1alpha1.ShardSpec{{Name: "default", Flavour: v1alpha1.FlavourTraefik},
		{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy, Image: "haproxy:new"}}}
	held := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", Generation: 2}, Spec: spec,
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test", ShardFlavours: []v1alpha1.ShardFlavour{
			{Name: "default", Flavour: v1alpha1.FlavourTraefik}, {Name: "heavy", Flavour: v1alpha1.FlavourTraefik}}}}
	admitted := held.DeepCopy()
	admitted.Status.ShardFlavours[1] = v1alpha1.ShardFlavour{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy, Image: "haproxy:new"}
	if held.Shards()[1].Flavour == admitted.Shards()[1].Flavour {
		t.Fatalf("setup: the admission changes nothing rendered")
	}
	if !shardsPredicate.Update(event.UpdateEvent{ObjectOld: held, ObjectNew: admitted}) {
		t.Errorf("the admission of heavy's change (status.shardFlavours: traefik -> haproxy) does not wake the shards " +
			"controller: heavy's routers are not re-rendered as HAProxy until some unrelated event")
	}
}
