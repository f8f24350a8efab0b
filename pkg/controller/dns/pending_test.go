package dns

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestPendingRecords: a queued change holds the status writer until its reconcile ends and for
// recordsQuiet after the last one ended; a change that comes in during that reconcile keeps
// holding (its own reconcile is queued).
func TestPendingRecords(t *testing.T) {
	p := newPendingRecords()
	now := time.Now()
	p.now = func() time.Time { return now }
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	if p.Hold() != 0 {
		t.Fatal("empty set pending")
	}
	var during func()
	r := p.clearing(reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) {
		if during != nil {
			during()
		}
		return ctrl.Result{}, nil
	}))
	reconcileKey := func(k types.NamespacedName) {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: k}); err != nil {
			t.Fatal(err)
		}
	}
	p.mark(a)
	p.mark(b)
	reconcileKey(a)
	if p.Hold() == 0 {
		t.Fatal("b's change is still queued")
	}
	during = func() { p.mark(b) }
	reconcileKey(b)
	if p.Hold() == 0 {
		t.Fatal("a change that came in during b's reconcile was cleared with it")
	}
	during = nil
	reconcileKey(b)
	if p.Hold() == 0 {
		t.Fatal("not holding right after the last change was reconciled: a burst's next change may be on its way")
	}
	now = now.Add(recordsQuiet - time.Millisecond)
	p.mark(a) // a change within the quiet period restarts it once reconciled
	reconcileKey(a)
	now = now.Add(recordsQuiet - time.Millisecond)
	if h := p.Hold(); h != time.Millisecond {
		t.Fatalf("hold %s with a millisecond of the quiet period left", h)
	}
	now = now.Add(time.Millisecond)
	if p.Hold() != 0 {
		t.Fatalf("still holding %s after every change was reconciled", recordsQuiet)
	}
}
