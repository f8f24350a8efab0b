package ingress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// cleanupRetry is how soon cleanup is tried again while the user cluster cannot be observed.
const cleanupRetry = 30 * time.Second

// reconcileDelete leaves the user cluster as if Shardgate had never been there: every Ingress
// loses the shard label, the allocation annotations and the address the routers published, and
// every object Shardgate created (routers, IngressClass, admission policy, kube-public
// ConfigMap, namespace) is deleted; then the finalizer goes. While the cluster cannot be
// observed nothing is touched and CleanupPending says so, unless the lifecycle controller marked
// the cleanup best-effort (the cluster is being deleted or its source is gone): then a cluster
// that cannot be observed is not waited for.
func (r *Reconciler) reconcileDelete(ctx context.Context, ci *v1alpha1.ClusterIngress) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	cluster, ok := r.Engager.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		if ci.Annotations[v1alpha1.CleanupAnnotation] == v1alpha1.CleanupBestEffort {
			log.FromContext(ctx).Info("the cluster is going away and cannot be observed: its cleanup is skipped")
			return ctrl.Result{}, r.removeCleanupFinalizer(ctx, ci)
		}
		return ctrl.Result{RequeueAfter: cleanupRetry}, r.setCleanupPending(ctx, ci,
			"the user cluster cannot be observed; Shardgate's objects stay in it until it can (remove finalizer "+
				v1alpha1.UserClusterCleanupFinalizer+" to give up)")
	}
	domains := map[string]bool{}
	if ci.Status.Domain != "" {
		for _, s := range shardSpecs(ci) {
			domains[names.ShardDomain(s.Name, ci.Status.Domain)] = true
		}
	}
	if err := releaseAll(ctx, cluster, domains); err != nil {
		return ctrl.Result{}, errors.Join(err, r.setCleanupPending(ctx, ci, err.Error()))
	}
	if err := r.prune(ctx, cluster, nil); err != nil {
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

// releaseAll takes Shardgate's label, annotations and router-published addresses off every
// Ingress. The hosts Shardgate filled in stay: they are part of the user's Ingress now.
func releaseAll(ctx context.Context, cluster usercluster.Cluster, shardDomains map[string]bool) error {
	list := &networkingv1.IngressList{}
	if err := cluster.Reader().List(ctx, list); err != nil {
		return usercluster.DescribeError("list Ingresses", err)
	}
	w := cluster.Writer()
	for i := range list.Items {
		ing := &list.Items[i]
		if carriesAllocation(ing) {
			if err := w.Update(ctx, untell(ing), client.FieldOwner(v1alpha1.FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
				return usercluster.DescribeError(fmt.Sprintf("release Ingress %s/%s", ing.Namespace, ing.Name), err)
			}
		}
		lb := ing.Status.LoadBalancer.Ingress
		kept := slices.DeleteFunc(slices.Clone(lb), func(x networkingv1.IngressLoadBalancerIngress) bool { return shardDomains[x.Hostname] })
		if len(kept) == len(lb) {
			continue
		}
		fresh := &networkingv1.Ingress{}
		if err := w.Get(ctx, client.ObjectKeyFromObject(ing), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return usercluster.DescribeError(fmt.Sprintf("read Ingress %s/%s", ing.Namespace, ing.Name), err)
		}
		fresh.Status.LoadBalancer.Ingress = slices.DeleteFunc(fresh.Status.LoadBalancer.Ingress,
			func(x networkingv1.IngressLoadBalancerIngress) bool { return shardDomains[x.Hostname] })
		if err := w.Status().Update(ctx, fresh, client.FieldOwner(v1alpha1.FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return usercluster.DescribeError(fmt.Sprintf("clear the address of Ingress %s/%s", ing.Namespace, ing.Name), err)
		}
	}
	return nil
}

func (r *Reconciler) setCleanupPending(ctx context.Context, ci *v1alpha1.ClusterIngress, msg string) error {
	before := ci.DeepCopy()
	meta.SetStatusCondition(&ci.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionShardsAvailable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonCleanupPending, Message: msg, ObservedGeneration: ci.Generation})
	if equalConditions(before.Status.Conditions, ci.Status.Conditions) {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, ci, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldOwner)))
}
