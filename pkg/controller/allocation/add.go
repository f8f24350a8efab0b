// Package allocation is the allocation controller: it decides every Ingress' shard and hosts in a
// user cluster (pkg/allocation) and writes the decisions there.
package allocation

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/conflicts"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/replicas/gate"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update

// Add registers the allocation controller.
func Add(mgr ctrl.Manager, access clusteraccess.Access, board *cistatus.Board, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).Named("allocation").
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		// Its own status writes (route counts) do not wake it: spec, domain and deletion do.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.ClaimsChanged))).
		// Routes, and router Deployments (their readiness is LeastLoaded's capacity).
		WatchesRawSource(source.Channel(access.Subscribe(clusteraccess.ChangeRoutes|clusteraccess.ChangeManaged), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(gate.Changes()).
		Complete(gate.Only(conflicts.Retried("allocation", &Reconciler{Client: mgr.GetClient(), Access: access, Board: board})))
}
