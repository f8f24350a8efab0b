package watchcache

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAPolledKindIsListedNeverWatched (against fakeAPI; cache_test.go has the real-server
// version): a polled kind holds no stream; each list tells the handler what changed since the
// last; Remember and Forget make the caller's own writes readable before the next list.
func TestAPolledKindIsListedNeverWatched(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a", "ns/b")
	c, rec, _ := startFakeKind(t, srv, Options{PollInterval: 100 * time.Millisecond}, Kind{Polled: true})
	if got := rec.list(); !slices.Equal(got, []string{"initial ns/a", "initial ns/b"}) {
		t.Fatalf("events after the first list: %v", got)
	}
	api.create("ns/c", nil)
	api.update("ns/a", "2")
	api.remove("ns/b")
	eventually(t, "the next list's difference", func() bool {
		return rec.has("add ns/c") && rec.has("update ns/a") && rec.has("delete ns/b")
	})
	if names, _ := stored(t, c); !slices.Equal(names, []string{"ns/a", "ns/c"}) {
		t.Errorf("store %v", names)
	}
	for _, r := range api.requestLog() {
		if r != "list" {
			t.Fatalf("request %q: a polled kind is only listed (%v)", r, api.requestLog())
		}
	}
	if n := api.count("list"); n < 2 {
		t.Errorf("%d lists", n)
	}

	// The caller's own write, readable at once; a delete, gone at once. (A cache of its own that
	// does not list again meanwhile, so the reads see Remember and Forget, not a list.)
	c, _, _ = startFakeKind(t, srv, Options{PollInterval: time.Hour}, Kind{Polled: true})
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine", ResourceVersion: "99"}}
	c.Remember(mine)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(mine), &corev1.ConfigMap{}); err != nil {
		t.Errorf("a remembered write is not readable: %v", err)
	}
	c.Forget(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}})
	if names, _ := stored(t, c); !slices.Equal(names, []string{"ns/a", "ns/mine"}) {
		t.Errorf("store %v, want [ns/a ns/mine]", names)
	}
}

// TestAnOnDemandKindStartsAtItsFirstRead (against fakeAPI; cache_test.go has the real-server
// version): nothing is requested before the first read, which waits for the first list and then
// reads it; the kind is watched from then on.
func TestAnOnDemandKindStartsAtItsFirstRead(t *testing.T) {
	api, srv := newFakeAPI(t, "ns/a")
	c, rec, _ := startFakeKind(t, srv, Options{}, Kind{OnDemand: true})
	if got := api.requestLog(); len(got) != 0 {
		t.Fatalf("requests before the first read: %v", got)
	}
	l := &corev1.ConfigMapList{}
	if err := c.List(context.Background(), l); err != nil || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("the first read: %v %v", l.Items, err)
	}
	waitRequest(t, api, "watch 1")
	api.create("ns/b", nil)
	eventually(t, "ns/b added", func() bool { return rec.has("add ns/b") })
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want 1", n)
	}
}
