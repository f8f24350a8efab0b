package ingress

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update

// Add registers the shard and allocation controllers.
func Add(mgr ctrl.Manager, engager *usercluster.Engager, concurrency int) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("allocation").
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		// Routes, and router Deployments (their readiness is LeastLoaded's capacity).
		WatchesRawSource(source.Channel(engager.Subscribe(usercluster.ChangeRoutes|usercluster.ChangeManaged), &handler.EnqueueRequestForObject{})).
		Complete(&AllocationReconciler{Client: mgr.GetClient(), Engager: engager})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("shards").
		// Clusters are independent: one slow cluster must not queue the others behind it.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&v1alpha1.ClusterIngress{}).
		// Drift of managed objects, and nodes (which shards can schedule).
		WatchesRawSource(source.Channel(engager.Subscribe(usercluster.ChangeManaged|usercluster.ChangeNodes), &handler.EnqueueRequestForObject{})).
		Complete(&Reconciler{Client: mgr.GetClient(), Engager: engager})
}
