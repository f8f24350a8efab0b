package allocation

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// cleanupRetry is how soon cleanup is tried again while the user cluster cannot be observed.
const cleanupRetry = 30 * time.Second

func ensureFinalizer(ctx context.Context, c client.Client, ci *v1alpha1.ClusterIngress) error {
	if controllerutil.ContainsFinalizer(ci, v1alpha1.AllocationCleanupFinalizer) {
		return nil
	}
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.AddFinalizer(ci, v1alpha1.AllocationCleanupFinalizer)
	return c.Patch(ctx, ci, patch)
}

// reconcileDelete takes Shardgate's shard label, allocation annotations and router-published
// addresses off every route of the cluster (the hosts Shardgate filled in stay: they are part of
// the user's route now), then releases the finalizer. While the cluster cannot be observed it
// waits (the shard controller reports CleanupPending), unless the cleanup is best-effort.
func (r *Reconciler) reconcileDelete(ctx context.Context, ci *v1alpha1.ClusterIngress) (ctrl.Result, error) {
	forgetRoutes(client.ObjectKeyFromObject(ci).String())
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.AllocationCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		if ci.Annotations[v1alpha1.CleanupAnnotation] != v1alpha1.CleanupBestEffort {
			return ctrl.Result{RequeueAfter: cleanupRetry}, nil
		}
		log.FromContext(ctx).Info("the cluster is going away and cannot be observed: its routes are not released")
	} else if err := releaseAll(ctx, cluster, shardsOf(ci)); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.RemoveFinalizer(ci, v1alpha1.AllocationCleanupFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ci, patch))
}

// shardsOf are the cluster's shards as route status names them; none before it has a domain
// (an empty list, not nil: to the kinds nil means every entry).
func shardsOf(ci *v1alpha1.ClusterIngress) []routekinds.Shard {
	shards := []routekinds.Shard{}
	if ci.Status.Domain != "" {
		for _, s := range ci.Shards() {
			shards = append(shards, routekinds.Shard{Name: s.Name, Domain: names.ShardDomain(s.Name, ci.Status.Domain)})
		}
	}
	return shards
}

// releaseAll takes Shardgate's label, annotations and router-published addresses off every
// route of every kind.
func releaseAll(ctx context.Context, cluster clusteraccess.Cluster, shards []routekinds.Shard) error {
	for _, k := range cluster.RouteKinds() {
		if err := releaseKind(ctx, cluster, k, shards); err != nil {
			return err
		}
	}
	return nil
}

func releaseKind(ctx context.Context, cluster clusteraccess.Cluster, k routekinds.Kind, shards []routekinds.Shard,
) error {
	list := k.NewList()
	if err := cluster.Reader().List(ctx, list); err != nil {
		return clusteraccess.DescribeError("list "+k.Resource(), err)
	}
	w := cluster.Writer()
	for _, o := range k.Items(list) {
		what := fmt.Sprintf("%s %s/%s", k.Name(), o.GetNamespace(), o.GetName())
		if want, carried := k.Released(o); carried {
			if err := patchRoute(ctx, w, k, o, want); err != nil && !apierrors.IsNotFound(err) {
				return clusteraccess.DescribeError("release "+what, err)
			}
		}
		if !k.Published(o, shards) {
			continue
		}
		fresh := k.New()
		if err := w.Get(ctx, client.ObjectKeyFromObject(o), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return clusteraccess.DescribeError("read "+what, err)
		}
		k.Unpublish(fresh, shards)
		if err := w.Status().Update(ctx, fresh, client.FieldOwner(v1alpha1.FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return clusteraccess.DescribeError("clear the address of "+what, err)
		}
	}
	return nil
}
