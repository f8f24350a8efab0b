// Package allocation is the allocation controller: it decides every Ingress' shard and hosts in a
// user cluster (pkg/allocation) and writes the decisions there.
package allocation

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/finalizers,verbs=update

// Config wires the allocation controller.
type Config struct {
	Kit    kit.Config
	Access clusteraccess.Access
	// Board takes the controller's part of the status.
	Board       *cistatus.Board
	Concurrency int
}

// Add registers the allocation controller.
func Add(mgr ctrl.Manager, cfg Config) error {
	return kit.New(mgr, "allocation", cfg.Kit).Concurrency(cfg.Concurrency).
		// Its own status writes (route counts) do not wake it: spec, domain and deletion do.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.ClaimsChanged,
			predicates.RunningFlavoursChanged))).
		// Routes, and router Deployments (their readiness is LeastLoaded's capacity).
		WatchesRawSource(source.Channel(cfg.Access.Subscribe(clusteraccess.ChangeRoutes|clusteraccess.ChangeManaged),
			&handler.EnqueueRequestForObject{})).
		Complete(&Reconciler{Client: mgr.GetClient(), Access: cfg.Access, Board: cfg.Board})
}
