// Package conflicts makes a lost write race a quiet retry. The controllers write the same
// ClusterIngress status with an optimistic lock, and a cache a moment behind the API server
// writes on a stale read: the API server answers 409 Conflict. That is expected and harmless, so
// it is retried from a fresh read with the backoff an error would get, but not logged as a
// "Reconciler error" with a stack trace for an operator to chase.
package conflicts

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var retried = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardgate_write_conflicts_total",
	Help: "Reconciles that lost a write race (409 Conflict: the object changed since it was read) and were retried, by controller.",
}, []string{"controller"})

func init() { metrics.Registry.MustRegister(retried) }

// Retried runs r. A reconcile whose error is nothing but conflicts is requeued after the
// per-request exponential backoff controller-runtime gives an error (5 ms, doubling, at most
// 1,000 s), logged at V(1) and counted; any other error is returned as it is.
func Retried(controller string, r reconcile.Reconciler) reconcile.Reconciler {
	backoff := workqueue.DefaultTypedItemBasedRateLimiter[reconcile.Request]()
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err == nil || !onlyConflicts(err) {
			backoff.Forget(req)
			return res, err
		}
		retried.WithLabelValues(controller).Inc()
		log.FromContext(ctx).V(1).Info("a write lost to a newer version of the object; trying again from a fresh read", "error", err.Error())
		return reconcile.Result{RequeueAfter: backoff.When(req)}, nil
	})
}

// onlyConflicts reports whether err is a conflict, or joins nothing but conflicts: a conflict
// joined with another error must not hide that error. Only the seed's conflicts count: a user
// cluster's errors reach the controllers through clusteraccess.DescribeError, which keeps none of
// the server's error, so a hostile user cluster cannot make its failures quiet with a 409.
func onlyConflicts(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		for _, e := range errs {
			if !onlyConflicts(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return apierrors.IsConflict(err)
}
