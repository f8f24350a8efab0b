package dns

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestPendingRecords: a queued change holds the status writer until its reconcile ends; a change
// that comes in during that reconcile keeps holding (its own reconcile is queued); a cluster the
// replica gate skips is cleared as well.
func TestPendingRecords(t *testing.T) {
	p := newPendingRecords()
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	if p.Any() {
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
	if !p.Any() {
		t.Fatal("b's change is still queued")
	}
	during = func() { p.mark(b) }
	reconcileKey(b)
	if !p.Any() {
		t.Fatal("a change that came in during b's reconcile was cleared with it")
	}
	during = nil
	reconcileKey(b)
	if p.Any() {
		t.Fatal("pending after every change was reconciled")
	}
}
