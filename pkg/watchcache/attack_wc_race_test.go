package watchcache

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAttackWCUnsafeListsRaceFreeWhileUpdated: readers listing with UnsafeDisableDeepCopy, and
// reading every item's maps and kind, while the watch replaces the stored objects and other
// readers list deep copies and Get: under -race nothing the lists give is written by the cache,
// and no stored object is written by a List (its kind included).
func TestAttackWCUnsafeListsRaceFreeWhileUpdated(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a", "ns/b", "other/c")
	c, _, _ := startFake(t, srv, false)
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l := &corev1.ConfigMapList{}
				opts := []client.ListOption{client.UnsafeDisableDeepCopy}
				if g%2 == 1 {
					opts = append(opts, client.InNamespace("ns"))
				}
				if err := c.List(ctx, l, opts...); err != nil {
					t.Error(err)
					return
				}
				for i := range l.Items {
					_ = l.Items[i].Data["v"]
					_ = l.Items[i].Labels["x"]
					if l.Items[i].Kind != "ConfigMap" {
						t.Errorf("kind %q", l.Items[i].Kind)
					}
				}
				safe := &corev1.ConfigMapList{}
				if err := c.List(ctx, safe); err != nil {
					t.Error(err)
					return
				}
				cm := &corev1.ConfigMap{}
				_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "a"}, cm)
			}
		}()
	}
	var last int
	for i := 0; i < 200; i++ {
		last = api.update([]string{"ns/a", "ns/b", "other/c"}[i%3], strconv.Itoa(i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l := &corev1.ConfigMapList{}
		_ = c.List(ctx, l)
		if l.ResourceVersion == strconv.Itoa(last) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	// The stored objects never had their kind set by an unsafe List.
	for _, o := range c.kinds[corev1.SchemeGroupVersion.WithKind("ConfigMap")].store.List() {
		if k := o.(*corev1.ConfigMap).Kind; k != "" && k != "ConfigMap" {
			t.Errorf("stored kind %q", k)
		}
	}
}

// TestAttackWCUnsafeListLeavesStoredKind: an object stored from a list (its items carry no kind)
// keeps no kind after an unsafe List set the kind of the list's copy.
func TestAttackWCUnsafeListLeavesStoredKind(t *testing.T) {
	_, srv := newFakeAPI(t, "ns/a")
	c, _, _ := startFake(t, srv, false)
	for _, o := range c.kinds[corev1.SchemeGroupVersion.WithKind("ConfigMap")].store.List() {
		// A real server's list items carry no kind (the fake's do): as the cache stores those.
		o.(*corev1.ConfigMap).TypeMeta = metav1.TypeMeta{}
	}
	l := &corev1.ConfigMapList{}
	if err := c.List(context.Background(), l, client.UnsafeDisableDeepCopy); err != nil || len(l.Items) != 1 || l.Items[0].Kind != "ConfigMap" {
		t.Fatalf("%v %v", l.Items, err)
	}
	for _, o := range c.kinds[corev1.SchemeGroupVersion.WithKind("ConfigMap")].store.List() {
		if o.(*corev1.ConfigMap).Kind != "" {
			t.Errorf("an unsafe List wrote the stored object's kind")
		}
	}
}
