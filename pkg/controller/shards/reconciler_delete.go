package shards

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// cleanupRetry is how soon cleanup is tried again while the user cluster cannot be observed.
const cleanupRetry = 30 * time.Second

// reconcileDelete deletes every object Shardgate created in the user cluster (routers,
// IngressClass, admission policy, kube-public ConfigMap, namespace); then the finalizer goes. The
// allocation controller takes its marks off the Ingresses; together the cluster is left as if
// Shardgate had never been there. While the cluster cannot be
// observed nothing is touched and CleanupPending says so, unless the lifecycle controller marked
// the cleanup best-effort (the cluster is being deleted or its source is gone): then a cluster
// that cannot be observed is not waited for.
func (r *Reconciler) reconcileDelete(ctx context.Context, ci *v1alpha1.ClusterIngress) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		if ci.Annotations[v1alpha1.CleanupAnnotation] == v1alpha1.CleanupBestEffort {
			log.FromContext(ctx).Info("the cluster is going away and cannot be observed: its cleanup is skipped")
			return ctrl.Result{}, r.removeCleanupFinalizer(ctx, ci)
		}
		return ctrl.Result{RequeueAfter: cleanupRetry}, r.setCleanupPending(ctx, ci,
			"the user cluster cannot be observed; Shardgate's objects stay in it until it can (remove finalizer "+
				v1alpha1.UserClusterCleanupFinalizer+" to give up)")
	}
	if err := r.prune(ctx, cluster, nil, nil); err != nil {
		return ctrl.Result{}, errors.Join(err, r.setCleanupPending(ctx, ci, err.Error()))
	}
	log.FromContext(ctx).Info("user cluster cleaned up: Shardgate's objects and allocation marks removed")
	return ctrl.Result{}, r.removeCleanupFinalizer(ctx, ci)
}

func (r *Reconciler) removeCleanupFinalizer(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.RemoveFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, ci, patch))
}

func (r *Reconciler) setCleanupPending(ctx context.Context, ci *v1alpha1.ClusterIngress, msg string) error {
	before := ci.DeepCopy()
	meta.SetStatusCondition(&ci.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionShardsAvailable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonCleanupPending, Message: msg, ObservedGeneration: ci.Generation})
	if equalConditions(before.Status.Conditions, ci.Status.Conditions) {
		return nil
	}
	return client.IgnoreNotFound(r.Board.Write(ctx, ci, cistatus.Shards))
}
