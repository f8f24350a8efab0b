package routedips

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
)

// reconcileDelete takes the holder taints off the cluster's nodes and deletes its shards'
// RoutedIPs, then lets the ClusterIngress go (its records with it, so the class's firewall map
// drops its holders). The cloud keeps the addresses where they are: nothing in the seed document
// unassigns one, and an address left on a node harms nobody. A cluster that cannot be observed is
// waited for, unless its cleanup is best-effort (the cluster or its source is going away). Owners'
// RoutedIPs and the CRD stay: they are the owners'.
func (r *Reconciler) reconcileDelete(ctx context.Context, ci *v1alpha1.ClusterIngress, cluster clusteraccess.Cluster, observable bool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.RoutedIPCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	switch {
	case !observable && ci.Annotations[v1alpha1.CleanupAnnotation] == v1alpha1.CleanupBestEffort:
		log.FromContext(ctx).Info("the cluster is going away and cannot be observed: its routed-IP cleanup is skipped")
	case !observable:
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	case cluster.Capabilities().CRDs:
		if err := ensureShardRoutedIPs(ctx, cluster, nil); err != nil {
			return ctrl.Result{}, err
		}
		nodes, err := cluster.Nodes(ctx)
		if err != nil {
			return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's nodes", err)
		}
		if err := syncTaints(ctx, cluster, nodes, nil); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.releaseAddresses(ctx, ci, nil); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.RemoveFinalizer(ci, v1alpha1.RoutedIPCleanupFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ci, patch))
}
