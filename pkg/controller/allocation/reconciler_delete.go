package allocation

import (
	"context"
	"fmt"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
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
// addresses off every Ingress of the cluster (the hosts Shardgate filled in stay: they are part
// of the user's Ingress now), then releases the finalizer. While the cluster cannot be observed
// it waits (the shard controller reports CleanupPending), unless the cleanup is best-effort.
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
		log.FromContext(ctx).Info("the cluster is going away and cannot be observed: its Ingresses are not released")
	} else if err := releaseAll(ctx, cluster, shardDomains(ci)); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(ci.DeepCopy())
	controllerutil.RemoveFinalizer(ci, v1alpha1.AllocationCleanupFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ci, patch))
}

func shardDomains(ci *v1alpha1.ClusterIngress) map[string]bool {
	domains := map[string]bool{}
	if ci.Status.Domain != "" {
		for _, s := range ci.Shards() {
			domains[names.ShardDomain(s.Name, ci.Status.Domain)] = true
		}
	}
	return domains
}

// releaseAll takes Shardgate's label, annotations and router-published addresses off every
// Ingress.
func releaseAll(ctx context.Context, cluster clusteraccess.Cluster, shardDomains map[string]bool) error {
	list := &networkingv1.IngressList{}
	if err := cluster.Reader().List(ctx, list); err != nil {
		return clusteraccess.DescribeError("list Ingresses", err)
	}
	w := cluster.Writer()
	ours := func(x networkingv1.IngressLoadBalancerIngress) bool { return shardDomains[x.Hostname] }
	for i := range list.Items {
		ing := &list.Items[i]
		if allocation.CarriesAllocation(ing) {
			if err := patchIngress(ctx, w, ing, allocation.Untell(ing)); err != nil && !apierrors.IsNotFound(err) {
				return clusteraccess.DescribeError(fmt.Sprintf("release Ingress %s/%s", ing.Namespace, ing.Name), err)
			}
		}
		if !slices.ContainsFunc(ing.Status.LoadBalancer.Ingress, ours) {
			continue
		}
		fresh := &networkingv1.Ingress{}
		if err := w.Get(ctx, client.ObjectKeyFromObject(ing), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return clusteraccess.DescribeError(fmt.Sprintf("read Ingress %s/%s", ing.Namespace, ing.Name), err)
		}
		fresh.Status.LoadBalancer.Ingress = slices.DeleteFunc(fresh.Status.LoadBalancer.Ingress, ours)
		if err := w.Status().Update(ctx, fresh, client.FieldOwner(v1alpha1.FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return clusteraccess.DescribeError(fmt.Sprintf("clear the address of Ingress %s/%s", ing.Namespace, ing.Name), err)
		}
	}
	return nil
}
