package allocation

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWritePass: an Ingress the cache still shows as it was before our last write is skipped
// (and stays remembered); one the cache has moved on from is written again; errors are kept.
func TestWritePass(t *testing.T) {
	stale := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "a", ResourceVersion: "10"}}
	seen := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "b", ResourceVersion: "12"}}
	fresh := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "c", ResourceVersion: "7"}}
	failing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "d", ResourceVersion: "8"}}
	p := newWritePass(map[types.UID]string{"a": "10", "b": "11"}, neverYield)
	var calls sync.Map
	for _, ing := range []*networkingv1.Ingress{stale, seen, fresh, failing} {
		p.write(ing, func() (bool, error) {
			calls.Store(ing.UID, true)
			if ing == failing {
				return false, errors.New("boom")
			}
			return true, nil
		})
	}
	unseen, errs := p.wait()
	if _, called := calls.Load(types.UID("a")); called {
		t.Error("an Ingress whose write the cache has not shown was written again")
	}
	for _, uid := range []types.UID{"b", "c", "d"} {
		if _, called := calls.Load(uid); !called {
			t.Errorf("%s not written", uid)
		}
	}
	want := map[types.UID]string{"a": "10", "b": "12", "c": "7"}
	if len(unseen) != len(want) {
		t.Errorf("unseen %v, want %v", unseen, want)
	}
	for k, v := range want {
		if unseen[k] != v {
			t.Errorf("unseen %v, want %v", unseen, want)
		}
	}
	if len(errs) != 1 {
		t.Errorf("errors %v, want the one failure", errs)
	}
}

// TestWritePassEventsAfterWrites: the Events the writes record are created once every write is
// done, and all of them before wait returns.
func TestWritePassEventsAfterWrites(t *testing.T) {
	p := newWritePass(nil, neverYield)
	var mu sync.Mutex
	var order []string
	for i := range 3 * writeWorkers {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint(i)), ResourceVersion: "1"}}
		p.write(ing, func() (bool, error) {
			mu.Lock()
			order = append(order, "write")
			mu.Unlock()
			p.later(func() {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, "event")
			})
			return true, nil
		})
	}
	p.wait()
	n := 3 * writeWorkers
	if len(order) != 2*n {
		t.Fatalf("%d writes and Events done by wait, want %d of each", len(order), n)
	}
	for i, step := range order {
		if want := map[bool]string{true: "write", false: "event"}[i < n]; step != want {
			t.Fatalf("step %d was a %s, want every write before the first Event: %v", i, step, order)
		}
	}
}
