package watchcache

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestUnsafeListSharesTheStoredObjects: with client.UnsafeDisableDeepCopy, List gives shallow
// copies of the stored objects (their maps are the store's: nothing is copied per item), each with
// its kind set on the list's own copy; without it, a reader's change of an item never reaches the
// store.
func TestUnsafeListSharesTheStoredObjects(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	api.update("ns/a", "1")
	c, _, _ := startFake(t, srv, false)
	ctx := context.Background()

	safe := &corev1.ConfigMapList{}
	if err := c.List(ctx, safe); err != nil || len(safe.Items) != 1 {
		t.Fatalf("list: %v %v", safe.Items, err)
	}
	safe.Items[0].Data["v"] = "changed by the reader"
	shared := &corev1.ConfigMapList{}
	if err := c.List(ctx, shared, client.UnsafeDisableDeepCopy); err != nil || len(shared.Items) != 1 {
		t.Fatalf("unsafe list: %v %v", shared.Items, err)
	}
	cm := &shared.Items[0]
	if cm.Data["v"] != "1" {
		t.Errorf("a deep copy's change reached the store: %v", cm.Data)
	}
	if gvk := cm.GroupVersionKind(); gvk != corev1.SchemeGroupVersion.WithKind("ConfigMap") {
		t.Errorf("unsafe list item's kind %v", gvk)
	}
	again := &corev1.ConfigMapList{}
	if err := c.List(ctx, again, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	cm.Data["probe"] = "x" // a test's write, only to see that both lists share the store's map
	if again.Items[0].Data["probe"] != "x" {
		t.Error("an unsafe list copied the stored object's data")
	}
	delete(cm.Data, "probe")
}
