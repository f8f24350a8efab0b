package conflicts

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

var conflict = apierrors.NewConflict(schema.GroupResource{Group: "shardgate.io", Resource: "clusteringresses"}, "c1", errors.New("the object has been modified"))

func TestOnlyConflicts(t *testing.T) {
	other := errors.New("update DNSEndpoint: connection refused")
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"conflict":             {conflict, true},
		"wrapped conflict":     {fmt.Errorf("status: %w", conflict), true},
		"joined conflicts":     {errors.Join(conflict, fmt.Errorf("again: %w", conflict)), true},
		"conflict and another": {errors.Join(other, conflict), false},
		"another":              {other, false},
		"not found":            {apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "s"), false},
		// A user cluster's answers reach controllers only described (none of its own error): its
		// 409 cannot make a failure quiet.
		"a user cluster's conflict": {clusteraccess.DescribeError("apply Deployment router-default", conflict), false},
	} {
		if got := onlyConflicts(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestRetried(t *testing.T) {
	var next error
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: time.Minute}, next
	})
	r := Retried("test", inner)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c1"}}

	next = conflict
	var last time.Duration
	for i := range 3 {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter <= last {
			t.Fatalf("conflict %d: error %v, requeue after %s (the one before: %s)", i+1, err, res.RequeueAfter, last)
		}
		last = res.RequeueAfter
	}
	next = errors.Join(errors.New("apply failed"), conflict)
	if _, err := r.Reconcile(context.Background(), req); err == nil {
		t.Fatal("a conflict hid another error")
	}
	next = nil
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("success: %v, %+v (want the reconciler's own result)", err, res)
	}
	next = conflict
	if res, _ := r.Reconcile(context.Background(), req); res.RequeueAfter >= last {
		t.Fatalf("the backoff was not reset by the success: %s", res.RequeueAfter)
	}
}
