package dnsendpoint

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete

// Add registers the DNS controller.
func Add(mgr ctrl.Manager, engager *usercluster.Engager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ClusterIngress{}, clusterIDIndex,
		func(o client.Object) []string { return []string{o.(*v1alpha1.ClusterIngress).Spec.ClusterID} }); err != nil {
		return fmt.Errorf("index %s: %w", clusterIDIndex, err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Engager: engager, Clock: clock.RealClock{}}
	return ctrl.NewControllerManagedBy(mgr).Named("dns").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		// external-dns writes DNSEndpoint status; only spec changes (or deletion) matter here.
		Owns(&DNSEndpoint{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A cluster ID freed or taken elsewhere changes who owns it.
		Watches(&v1alpha1.ClusterIngress{}, handler.EnqueueRequestsFromMapFunc(sameClusterID(mgr.GetClient()))).
		// Records follow nodes and router pods/Services; Ingress churn does not wake this.
		WatchesRawSource(source.Channel(engager.Subscribe(usercluster.ChangeNodes|usercluster.ChangeManaged), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

func sameClusterID(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		ci := o.(*v1alpha1.ClusterIngress)
		list := &v1alpha1.ClusterIngressList{}
		if err := c.List(ctx, list, client.MatchingFields{clusterIDIndex: ci.Spec.ClusterID}); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, x := range list.Items {
			if x.Namespace != ci.Namespace || x.Name != ci.Name {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: x.Namespace, Name: x.Name}})
			}
		}
		return reqs
	}
}

// concurrency is how many clusters are reconciled at once.
const concurrency = 8
