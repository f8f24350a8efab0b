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
	"github.com/shardgate/shardgate/pkg/controller/controllertest"
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
	if err := r.prune(context.Background(), user, nil); err != nil {
		t.Fatal(err)
	}
	if !exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(tenant)) {
		t.Error("the tenant's Ingress was pruned")
	}
	if exists(t, user.Client, &networkingv1.Ingress{}, client.ObjectKeyFromObject(stale)) {
		t.Error("Shardgate's stale canary Ingress was kept")
	}
}

