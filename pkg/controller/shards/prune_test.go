package shards

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestPruneKeepsTenantIngresses (issue 28 item 2): only Ingresses in shardgate-system are
// Shardgate's to prune; a tenant's Ingress that carries the managed-by label is not deleted.
func TestPruneKeepsTenantIngresses(t *testing.T) {
	managed := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	tenant := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Labels: managed}}
	stale := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.CanaryName("gone"), Labels: managed}}
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"}, tenant, stale)
	r := &Reconciler{}
	if err := r.prune(context.Background(), user, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(tenant)) {
		t.Error("the tenant's Ingress was pruned")
	}
	if exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(stale)) {
		t.Error("Shardgate's stale canary Ingress was kept")
	}
}

// TestPruneKeepsUnrenderedShards (issue 28 item 4): a shard that could not be rendered keeps its
// live objects; a removed shard's go.
func TestPruneKeepsUnrenderedShards(t *testing.T) {
	failed := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.CanaryName("bad"), Labels: names.RouterSelector("bad")}}
	removed := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.CanaryName("gone"), Labels: names.RouterSelector("gone")}}
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"}, failed, removed)
	if err := (&Reconciler{}).prune(context.Background(), user, nil, map[string]bool{"bad": true}); err != nil {
		t.Fatal(err)
	}
	if !exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(failed)) {
		t.Error("the unrendered shard's object was pruned")
	}
	if exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(removed)) {
		t.Error("the removed shard's object was kept")
	}
}
